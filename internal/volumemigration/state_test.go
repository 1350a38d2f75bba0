package volumemigration

import (
	"strings"
	"testing"
	"time"
)

func TestPhaseNext(t *testing.T) {
	order := []phase{phaseNone, phaseCopying, phaseStopped, phaseSwapping, phaseStarting, phaseDone}
	for i, p := range order {
		for j, q := range order {
			want := i == j || j == i+1 || (q == phaseNone && i < 3)
			if got := p.next(q); got != want {
				t.Errorf("%q -> %q: next = %v, want %v", p, q, got, want)
			}
		}
	}
}

func TestBeforeSwap(t *testing.T) {
	for p, want := range map[phase]bool{phaseNone: true, phaseCopying: true, phaseStopped: true, phaseSwapping: false, phaseStarting: false, phaseDone: false} {
		if got := p.beforeSwap(); got != want {
			t.Errorf("%q.beforeSwap() = %v, want %v", p, got, want)
		}
	}
}

func TestProgressRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	p := progress{Phase: phaseStopped, Claim: "ns/data", StorageClass: "openebs-hostpath", TargetClaim: "data-migrating-1", SourceVolume: "pv-a",
		Owners: []owner{{Kind: "Deployment", Name: "app", Replicas: 3}, {Kind: "CronJob", Name: "backup", Suspended: true}}, Files: 10, Bytes: 4096, StoppedAt: &at}
	got, err := progressOf(map[string]string{AnnotationProgress: p.value()})
	if err != nil {
		t.Fatal(err)
	}
	if got.value() != p.value() {
		t.Errorf("round trip: got %s, want %s", got.value(), p.value())
	}
	if none, err := progressOf(nil); err != nil || none.Phase != phaseNone {
		t.Errorf("no annotation: %+v, %v", none, err)
	}
}

func TestProgressOfRefusesWhatItDidNotWrite(t *testing.T) {
	for _, v := range []string{"not json", `{"phase":"teleporting"}`} {
		if _, err := progressOf(map[string]string{AnnotationProgress: v}); err == nil || !strings.Contains(err.Error(), AnnotationProgress) {
			t.Errorf("%q: err = %v, want one naming the annotation", v, err)
		}
	}
}

func TestProgressTo(t *testing.T) {
	p := progress{Phase: phaseCopying}
	if _, err := p.to(phaseSwapping); err == nil {
		t.Error("copying -> swapping skipped a step without an error")
	}
	q, err := p.to(phaseStopped)
	if err != nil || q.Phase != phaseStopped {
		t.Errorf("copying -> stopped: %+v, %v", q, err)
	}
	if _, err := (progress{Phase: phaseSwapping}).to(phaseNone); err == nil {
		t.Error("a rollback from the swap was allowed")
	}
}

func TestFurther(t *testing.T) {
	claim := progress{Phase: phaseStopped, TargetClaim: "a"}
	volume := progress{Phase: phaseSwapping, TargetClaim: "b"}
	if got := further(claim, volume); got.TargetClaim != "b" {
		t.Errorf("further chose %+v", got)
	}
	if got := further(volume, claim); got.TargetClaim != "b" {
		t.Errorf("further chose %+v", got)
	}
	if got := further(claim, progress{}); got.TargetClaim != "a" {
		t.Errorf("further chose %+v", got)
	}
}
