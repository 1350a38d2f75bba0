package importmark

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PendingAnnotation marks a cluster object from its create until Terraform surely has the
// create's answer: the provider removes it a moment after the create returns (ClearLater), or as
// it stops. An object that still carries the mark later was made by a create whose provider died
// (killed, cancelled) before its answer reached Terraform; no state can own it, so the next create
// of the same name takes it over instead of failing on it (Create).
const PendingAnnotation = "clusterstorage.io/create-pending"

// PendingDead is how old a mark must be before its create is taken for dead: a create that lives
// removes its mark within its own requests and waits (a local volume's create waits up to 10 s
// for the volume's phase).
var PendingDead = 30 * time.Second

// MarkPending puts the mark, with the time, on obj before it is created.
func MarkPending(obj metav1.Object) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[PendingAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	obj.SetAnnotations(a)
}

// clearPendingPatch is the JSON merge patch that removes the mark.
var clearPendingPatch = []byte(`{"metadata":{"annotations":{"` + PendingAnnotation + `":null}}}`)

// Patcher is the part of a typed client ClearPending uses.
type Patcher[T any] interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// ClearPending removes the mark from the object kind/name. A failure is a warning: the object
// is in state, and only another configuration creating its name would take it over.
func ClearPending[T any](ctx context.Context, client Patcher[T], kind, name string) diag.Diagnostics {
	var diags diag.Diagnostics
	if _, err := client.Patch(ctx, name, types.MergePatchType, clearPendingPatch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		diags.AddWarning(kind+" "+name+" keeps its annotation "+PendingAnnotation,
			"Removing the annotation that marks a create in progress failed: "+err.Error()+
				". The next refresh tries again; until then another configuration that creates an object of this name takes this one over.")
	}
	return diags
}

// clearDelay is how long after a create returns its mark stays: by then Terraform has the
// create's answer. Clearing it before returning would leave an object that no state records and
// no mark names whenever the provider is killed between that request and Terraform reading the
// answer (measured: 4 of 10 creates in flight, for StorageClasses). A provider killed within the
// delay after the answer leaves a mark on an object in state: its next refresh removes it.
var clearDelay = time.Second

// pending are the marks ClearLater will remove.
var pending struct {
	wg    sync.WaitGroup
	once  sync.Once
	flush chan struct{}
}

func init() { pending.flush = make(chan struct{}) }

// ClearLater removes the mark from the object kind/name, clearDelay after the create that made it
// returned (call it as the create returns), or at once when the provider stops (Flush).
func ClearLater[T any](ctx context.Context, client Patcher[T], kind, name string) {
	ctx = context.WithoutCancel(ctx)
	pending.wg.Add(1)
	go func() {
		defer pending.wg.Done()
		timer := time.NewTimer(clearDelay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-pending.flush:
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		for _, d := range ClearPending(ctx, client, kind, name) {
			tflog.Warn(ctx, d.Summary(), map[string]any{"detail": d.Detail()})
		}
	}()
}

// Flush removes every mark ClearLater holds now, waiting up to timeout: the provider calls it as
// it stops, when Terraform has every answer.
func Flush(timeout time.Duration) {
	pending.once.Do(func() { close(pending.flush) })
	done := make(chan struct{})
	go func() {
		pending.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
	}
}

// Orphan reads (with get) the object a create found already there and returns it, true, when it
// carries the mark of a dead create; false when it is someone's: no mark, or a mark its create
// removed while Orphan waited for it to be PendingDead old.
func Orphan[T metav1.Object](ctx context.Context, get func(context.Context) (T, error)) (T, bool, error) {
	for {
		obj, err := get(ctx)
		if err != nil {
			return obj, false, err
		}
		marked, ok := obj.GetAnnotations()[PendingAnnotation]
		if !ok {
			return obj, false, nil
		}
		at, err := time.Parse(time.RFC3339Nano, marked)
		if err != nil {
			return obj, false, fmt.Errorf("annotation %s=%q is not a time", PendingAnnotation, marked)
		}
		wait := time.Until(at.Add(PendingDead))
		if wait <= 0 {
			return obj, true, nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return obj, false, ctx.Err()
		case <-timer.C:
		}
	}
}

// Client is the part of a typed client of cluster-scoped objects Create uses.
type Client[T metav1.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Create creates obj (of the Kubernetes kind, managed by resource type typeName), marked pending.
// When an object of its name exists and is the leftover of a dead create (Orphan), take checks
// that it is the object planned (an error says how it differs) and sets it as planned, and it is
// updated: taken over. Any other object of the name is someone's: the error says how to import it.
func Create[T metav1.Object](ctx context.Context, client Client[T], obj T, kind, typeName string, take func(orphan T) error) (T, error) {
	MarkPending(obj)
	made, err := client.Create(ctx, obj, metav1.CreateOptions{})
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return made, err
	}
	var none T
	name := obj.GetName()
	alreadyExists := errors.New(AlreadyExistsDetail(kind, name, typeName, name, err))
	orphan, dead, getErr := Orphan(ctx, func(ctx context.Context) (T, error) { return client.Get(ctx, name, metav1.GetOptions{}) })
	if getErr != nil || !dead {
		return none, alreadyExists
	}
	notPlanned := func(why error) error {
		return fmt.Errorf("a %s named %s was left by an apply that was interrupted while it created it (annotation %s), but it is not the one planned: %w. "+
			"Delete it (`kubectl delete %s %s`) if nothing uses it, or choose another name", kind, name, PendingAnnotation, why, strings.ToLower(kind), name)
	}
	if err := take(orphan); err != nil {
		return none, notPlanned(err)
	}
	tflog.Warn(ctx, "taking over the "+kind+" an interrupted apply created", map[string]any{"name": name, "pending_since": orphan.GetAnnotations()[PendingAnnotation]})
	updated, err := client.Update(ctx, orphan, metav1.UpdateOptions{})
	if apierrors.IsInvalid(err) {
		return none, notPlanned(fmt.Errorf("it differs in what Kubernetes does not let change (%w)", err))
	}
	return updated, err
}
