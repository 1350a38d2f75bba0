package benchmark

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestJobErrorsNameTheAttribute: values that do not fit together are reported on the attribute
// the configuration sets, with what to do.
func TestJobErrorsNameTheAttribute(t *testing.T) {
	_, diags := cfg(func(m *Model) {
		m.StorageClass = types.StringValue("fast")
		m.BlockSize = types.StringValue("4M")
		m.Size = types.StringValue("2M")
	}).Request()
	if diags.ErrorsCount() != 1 {
		t.Fatalf("want one error, got %v", diags)
	}
	d := diags.Errors()[0]
	withPath, ok := d.(diag.DiagnosticWithPath)
	if !ok || !withPath.Path().Equal(path.Root("block_size")) {
		t.Fatalf("error without the block_size path: %v", d)
	}
	if d.Summary() != "Invalid fio job" || !strings.Contains(d.Detail(), `block_size "4M" is larger than size "2M"`) || !strings.Contains(d.Detail(), `e.g. block_size = "4k"`) {
		t.Errorf("diagnostic: %s: %s", d.Summary(), d.Detail())
	}
}

// TestFailureTimeoutHint: a timed out run says how to raise the timeout in the syntax the schema
// takes (the attribute `timeouts = { ... }`, not a block), with a valid duration.
func TestFailureTimeoutHint(t *testing.T) {
	for _, timeout := range []time.Duration{10 * time.Second, 2*time.Minute + 30*time.Second, 45 * time.Minute} {
		msg := failure(fmt.Errorf("waiting for the pod: %w", context.DeadlineExceeded), timeout)
		m := regexp.MustCompile("`timeouts = \\{ read = \"([^\"]+)\" \\}`").FindStringSubmatch(msg)
		if m == nil {
			t.Fatalf("no timeouts hint in %q", msg)
		}
		d, err := time.ParseDuration(m[1])
		if err != nil || d <= timeout {
			t.Errorf("timeout %s: hint %q is not a longer duration (%v)", timeout, m[1], err)
		}
	}
	if msg := failure(errors.New("fio failed"), time.Minute); strings.Contains(msg, "timeouts") {
		t.Errorf("a failure that is not a timeout got a timeout hint: %q", msg)
	}
}
