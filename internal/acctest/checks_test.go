package acctest

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
)

func TestErrorRegexp(t *testing.T) {
	re := ErrorRegexp(`its image could not be pulled \(\d+ times\): .*end`)
	for text, want := range map[string]bool{
		"its image could not be pulled (3 times): x end":        true,
		"its image could\n  not be pulled (3\ttimes): a\nb end": true, // wrapped lines, '.' over newlines
		"its image could not be pulled (x times): end":          false,
		"its imagecould not be pulled (3 times): end":           false, // a space needs white space
	} {
		if got := re.MatchString(text); got != want {
			t.Errorf("%q matches %q: %v, want %v", re, text, got, want)
		}
	}
}

func TestNumber(t *testing.T) {
	for _, c := range []struct {
		in   any
		want float64
	}{{json.Number("2.5"), 2.5}, {float64(3), 3}, {json.Number("x"), math.NaN()}, {nil, math.NaN()}, {"1", math.NaN()}, {int64(1), math.NaN()}} {
		if got := Number(c.in); got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("Number(%#v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestCheckValues(t *testing.T) {
	state := &tfjson.State{Values: &tfjson.StateValues{RootModule: &tfjson.StateModule{Resources: []*tfjson.StateResource{
		{Address: "data.x.a", AttributeValues: map[string]any{"n": json.Number("1")}},
		{Address: "data.x.b", AttributeValues: map[string]any{"n": json.Number("2")}},
	}}}}
	run := func(c statecheck.StateCheck, s *tfjson.State) error {
		var resp statecheck.CheckStateResponse
		c.CheckState(context.Background(), statecheck.CheckStateRequest{State: s}, &resp)
		return resp.Error
	}
	var seen float64
	if err := run(CheckValues("data.x.b", func(v map[string]any) error { seen = Number(v["n"]); return nil }), state); err != nil || seen != 2 {
		t.Errorf("data.x.b: err %v, saw n = %v, want 2", err, seen)
	}
	if err := run(CheckValues("data.x.c", func(map[string]any) error { return nil }), state); err == nil || !strings.Contains(err.Error(), "data.x.c not in state") {
		t.Errorf("missing address: err %v", err)
	}
	if err := run(CheckValues("data.x.a", func(map[string]any) error { return nil }), nil); err == nil || err.Error() != "no state" {
		t.Errorf("nil state: err %v", err)
	}
}
