package acctest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
)

// CheckState is a state check that runs f on the state Terraform reports after a step.
func CheckState(f func(*tfjson.State) error) statecheck.StateCheck {
	return stateCheck{f}
}

// CheckValues is a state check that runs f on the attribute values of the resource or data
// source at address; a state without it is an error.
func CheckValues(address string, f func(values map[string]any) error) statecheck.StateCheck {
	return stateCheck{func(s *tfjson.State) error {
		if s == nil || s.Values == nil || s.Values.RootModule == nil {
			return errors.New("no state")
		}
		for _, r := range s.Values.RootModule.Resources {
			if r.Address == address {
				return f(r.AttributeValues)
			}
		}
		return fmt.Errorf("%s not in state", address)
	}}
}

type stateCheck struct{ f func(*tfjson.State) error }

func (c stateCheck) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	resp.Error = c.f(req.State)
}

// Number is a number attribute of the values CheckValues passes (a json.Number or a float64),
// and NaN for anything else (null, a missing attribute, another type), which every comparison
// fails.
func Number(v any) float64 {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		if err != nil {
			return math.NaN()
		}
		return f
	case float64:
		return n
	}
	return math.NaN()
}
