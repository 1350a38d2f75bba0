package protoserver

import (
	"context"
	"errors"
	"iter"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// emptyProvider is the smallest framework provider: what is measured is the framework's server.
type emptyProvider struct{}

func (emptyProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "empty"
}
func (emptyProvider) Schema(context.Context, provider.SchemaRequest, *provider.SchemaResponse) {}
func (emptyProvider) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {
}
func (emptyProvider) Resources(context.Context) []func() resource.Resource       { return nil }
func (emptyProvider) DataSources(context.Context) []func() datasource.DataSource { return nil }

type payloadKey struct{}

// liveHeap is the heap that survives a full collection, in bytes.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// retained makes n GetMetadata requests through s, each with a context holding a 64 KiB value
// (standing for what terraform-plugin-go's loggers put there), and returns how much more heap is
// live afterwards, with s still reachable.
func retained(t *testing.T, s tfprotov6.ProviderServer, n int) uint64 {
	t.Helper()
	before := liveHeap()
	for range n {
		ctx, cancel := context.WithCancel(context.WithValue(context.Background(), payloadKey{}, make([]byte, 64<<10)))
		if _, err := s.GetMetadata(ctx, &tfprotov6.GetMetadataRequest{}); err != nil {
			t.Fatal(err)
		}
		cancel() // as gRPC does when the request ends
	}
	after := liveHeap()
	runtime.KeepAlive(s)
	if after < before {
		return 0
	}
	return after - before
}

// The framework's server keeps every request's context until StopProvider (the reason for this
// package); through Server, what it keeps is small. If the first check fails, the framework has
// stopped keeping them and this package can go.
func TestServer_releasesRequestContexts(t *testing.T) {
	const n = 400 // 25 MiB of payloads
	framework := providerserver.NewProtocol6(emptyProvider{})
	if got := retained(t, framework(), n); got < n*64<<10*3/4 {
		t.Errorf("the framework's own server kept %d KiB after %d requests of 64 KiB contexts; expected it to keep nearly all (%d KiB): "+
			"if it no longer does, internal/protoserver is not needed any more", got>>10, n, n*64)
	}
	if got := retained(t, Wrap(framework)(), n); got > 2<<20 {
		t.Errorf("through protoserver the framework kept %d KiB after %d requests of 64 KiB contexts; want under 2 MiB", got>>10, n)
	}
}

// recorder is an inner server that records the context each request saw.
type recorder struct {
	tfprotov6.ProviderServer //nolint:unused // only ReadResource and ListResource are called.
	list                     func(context.Context)
	sawValue                 any
	sawDone                  bool
	ctx                      context.Context
	child                    context.Context
	// stopChild is kept, not called: the test checks that the child is done with its parent.
	stopChild context.CancelFunc
}

func (r *recorder) ReadResource(ctx context.Context, _ *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	r.ctx = ctx
	r.sawValue = ctx.Value(payloadKey{})
	r.sawDone = ctx.Err() != nil
	r.child, r.stopChild = context.WithCancel(ctx)
	return &tfprotov6.ReadResourceResponse{}, nil
}

func (r *recorder) ValidateListResourceConfig(context.Context, *tfprotov6.ValidateListResourceConfigRequest) (*tfprotov6.ValidateListResourceConfigResponse, error) {
	return &tfprotov6.ValidateListResourceConfigResponse{}, nil
}

func (r *recorder) ListResource(ctx context.Context, _ *tfprotov6.ListResourceRequest) (*tfprotov6.ListResourceServerStream, error) {
	r.ctx = ctx
	return &tfprotov6.ListResourceServerStream{Results: iter.Seq[tfprotov6.ListResourceResult](func(func(tfprotov6.ListResourceResult) bool) {
		r.list(ctx)
	})}, nil
}

// During a request its context is the request's (values, cancellation); once it returns, the
// context the inner server saw is done and holds nothing.
func TestServer_requestContext(t *testing.T) {
	inner := &recorder{}
	s := New(inner)
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), payloadKey{}, "v"))
	defer cancel()
	if _, err := s.ReadResource(parent, &tfprotov6.ReadResourceRequest{}); err != nil {
		t.Fatal(err)
	}
	if inner.sawValue != "v" || inner.sawDone {
		t.Fatalf("during the request: value %v, done %v; want the request's value, not done", inner.sawValue, inner.sawDone)
	}
	if inner.ctx.Value(payloadKey{}) != nil || !errors.Is(inner.ctx.Err(), context.Canceled) {
		t.Fatalf("after the request: value %v, err %v; want nil, context.Canceled", inner.ctx.Value(payloadKey{}), inner.ctx.Err())
	}
	select {
	case <-inner.ctx.Done():
	default:
		t.Fatal("after the request its context is not done")
	}
	// A context derived during the request follows the request's cancellation.
	if inner.child.Err() != nil {
		t.Fatal("a context derived during the request was cancelled before the request's context")
	}
	cancel()
	<-inner.child.Done()
}

// A streaming request's context stays the request's while its answer is read after the call
// returns, until the request's context is done.
func TestServer_streamContext(t *testing.T) {
	var during any
	inner := &recorder{list: func(ctx context.Context) { during = ctx.Value(payloadKey{}) }}
	s := New(inner)
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), payloadKey{}, "v"))
	stream, err := s.ListResource(parent, &tfprotov6.ListResourceRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for range stream.Results {
	}
	if during != "v" {
		t.Fatalf("while the stream was read its context held %v; want the request's value", during)
	}
	cancel()
	<-inner.ctx.Done()
	// context.AfterFunc runs the release in its own goroutine: wait for it.
	for inner.ctx.Value(payloadKey{}) != nil {
		runtime.Gosched()
	}
}

// A server without list resources, actions or state stores answers those RPCs with an error.
func TestServer_unimplemented(t *testing.T) {
	s := New(struct{ tfprotov6.ProviderServer }{})
	if _, err := s.ListResource(context.Background(), &tfprotov6.ListResourceRequest{}); err == nil {
		t.Error("ListResource of a server without list resources succeeded")
	}
	if _, err := s.InvokeAction(context.Background(), &tfprotov6.InvokeActionRequest{}); err == nil {
		t.Error("InvokeAction of a server without actions succeeded")
	}
	if _, err := s.LockState(context.Background(), &tfprotov6.LockStateRequest{}); err == nil {
		t.Error("LockState of a server without state stores succeeded")
	}
}
