package backend

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// stepLog logs how long each step of an operation took, at Debug: one line "storage backend
// step" per step with op (create, update, read...), step and its milliseconds, so that a run
// with TF_LOG=DEBUG shows where an apply's time goes (scripts/bench-backend.sh prints that split).
type stepLog struct {
	ctx  context.Context
	op   string
	last time.Time
}

func newStepLog(ctx context.Context, op string) *stepLog {
	return &stepLog{ctx: ctx, op: op, last: time.Now()}
}

// done logs step as ending now, having started when the last step ended.
func (s *stepLog) done(step string) {
	now := time.Now()
	tflog.Debug(s.ctx, "storage backend step", map[string]any{"op": s.op, "step": step, "ms": now.Sub(s.last).Milliseconds()})
	s.last = now
}
