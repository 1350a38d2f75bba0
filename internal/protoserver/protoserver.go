// Package protoserver wraps the provider's protocol 6 server (terraform-plugin-framework's) so
// that what a request's context holds is freed when the request ends.
//
// The framework (v1.19) derives a cancellable context from each request's context and keeps its
// cancel function until Terraform sends StopProvider, which it does once, at the end; each kept
// function holds its request's context, and through it every value terraform-plugin-go and the
// framework put there (their loggers' options, copied on every field they set: 50-90 KiB per
// request). A plan of 400 classes and 400 volumes made about 2,400 requests and kept 37 MiB that
// way. Here each request gets a context of its own whose link to the request's is cut when the
// request returns (a streaming request: when its context is done), so what the framework keeps is
// a few hundred bytes per request.
//
// After its request returns, such a context is done and holds no values: a goroutine that outlives
// the request (for instance one that removes a create's mark a second later) keeps working, with
// its own deadline, but what it logs through that context goes nowhere.
package protoserver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// Wrap returns a server factory whose servers pass every request to the one inner returns, each
// with a context that is released when the request ends.
func Wrap(inner func() tfprotov6.ProviderServer) func() tfprotov6.ProviderServer {
	return func() tfprotov6.ProviderServer { return New(inner()) }
}

// New wraps s.
func New(s tfprotov6.ProviderServer) *Server {
	w := &Server{inner: s}
	//nolint:staticcheck // the optional interfaces are how tf6server finds these RPCs today.
	w.list, _ = s.(tfprotov6.ProviderServerWithListResource)
	//nolint:staticcheck // as above.
	w.actions, _ = s.(tfprotov6.ProviderServerWithActions)
	//nolint:staticcheck // as above.
	w.stores, _ = s.(tfprotov6.ProviderServerWithStateStores)
	return w
}

// Server is a tfprotov6.ProviderServer (with list resources, actions and state stores) that
// passes each request on with a releasable context.
type Server struct {
	inner   tfprotov6.ProviderServer
	list    tfprotov6.ListResourceServer
	actions tfprotov6.ActionServer
	stores  tfprotov6.StateStoreServer
}

//nolint:staticcheck // tf6server looks for these optional interfaces.
var (
	_ tfprotov6.ProviderServerWithListResource = (*Server)(nil)
	_ tfprotov6.ProviderServerWithActions      = (*Server)(nil)
	_ tfprotov6.ProviderServerWithStateStores  = (*Server)(nil)
)

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// requestCtx forwards to its request's context until release, then stands alone, done.
type requestCtx struct {
	mu     sync.RWMutex
	parent context.Context
}

func (c *requestCtx) get() context.Context {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.parent
}

func (c *requestCtx) release() {
	c.mu.Lock()
	c.parent = nil
	c.mu.Unlock()
}

// Deadline implements context.Context.
func (c *requestCtx) Deadline() (time.Time, bool) {
	if p := c.get(); p != nil {
		return p.Deadline()
	}
	return time.Time{}, false
}

// Done implements context.Context.
func (c *requestCtx) Done() <-chan struct{} {
	if p := c.get(); p != nil {
		return p.Done()
	}
	return closed
}

// Err implements context.Context.
func (c *requestCtx) Err() error {
	if p := c.get(); p != nil {
		return p.Err()
	}
	return context.Canceled
}

// Value implements context.Context.
func (c *requestCtx) Value(key any) any {
	if p := c.get(); p != nil {
		return p.Value(key)
	}
	return nil
}

// unary passes a request on and releases its context as it returns.
func unary[Req, Resp any](ctx context.Context, req Req, f func(context.Context, Req) (Resp, error)) (Resp, error) {
	c := &requestCtx{parent: ctx}
	defer c.release()
	return f(c, req)
}

// stream passes on a request whose answer is read after it returns: its context is released when
// the request's context is done (gRPC cancels it when the stream ends).
func stream[Req, Resp any](ctx context.Context, req Req, f func(context.Context, Req) (Resp, error)) (Resp, error) {
	c := &requestCtx{parent: ctx}
	context.AfterFunc(ctx, c.release)
	return f(c, req)
}

var errUnimplemented = errors.New("the provider does not implement this RPC")

func unimplemented[Resp any]() (Resp, error) {
	var zero Resp
	return zero, errUnimplemented
}

// ApplyResourceChange implements tfprotov6.ProviderServer.
func (s *Server) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	return unary(ctx, req, s.inner.ApplyResourceChange)
}

// CallFunction implements tfprotov6.ProviderServer.
func (s *Server) CallFunction(ctx context.Context, req *tfprotov6.CallFunctionRequest) (*tfprotov6.CallFunctionResponse, error) {
	return unary(ctx, req, s.inner.CallFunction)
}

// CloseEphemeralResource implements tfprotov6.ProviderServer.
func (s *Server) CloseEphemeralResource(ctx context.Context, req *tfprotov6.CloseEphemeralResourceRequest) (*tfprotov6.CloseEphemeralResourceResponse, error) {
	return unary(ctx, req, s.inner.CloseEphemeralResource)
}

// ConfigureProvider implements tfprotov6.ProviderServer.
func (s *Server) ConfigureProvider(ctx context.Context, req *tfprotov6.ConfigureProviderRequest) (*tfprotov6.ConfigureProviderResponse, error) {
	return unary(ctx, req, s.inner.ConfigureProvider)
}

// GenerateResourceConfig implements tfprotov6.ProviderServer.
func (s *Server) GenerateResourceConfig(ctx context.Context, req *tfprotov6.GenerateResourceConfigRequest) (*tfprotov6.GenerateResourceConfigResponse, error) {
	return unary(ctx, req, s.inner.GenerateResourceConfig)
}

// GetFunctions implements tfprotov6.ProviderServer.
func (s *Server) GetFunctions(ctx context.Context, req *tfprotov6.GetFunctionsRequest) (*tfprotov6.GetFunctionsResponse, error) {
	return unary(ctx, req, s.inner.GetFunctions)
}

// GetMetadata implements tfprotov6.ProviderServer.
func (s *Server) GetMetadata(ctx context.Context, req *tfprotov6.GetMetadataRequest) (*tfprotov6.GetMetadataResponse, error) {
	return unary(ctx, req, s.inner.GetMetadata)
}

// GetProviderSchema implements tfprotov6.ProviderServer.
func (s *Server) GetProviderSchema(ctx context.Context, req *tfprotov6.GetProviderSchemaRequest) (*tfprotov6.GetProviderSchemaResponse, error) {
	return unary(ctx, req, s.inner.GetProviderSchema)
}

// GetResourceIdentitySchemas implements tfprotov6.ProviderServer.
func (s *Server) GetResourceIdentitySchemas(ctx context.Context, req *tfprotov6.GetResourceIdentitySchemasRequest) (*tfprotov6.GetResourceIdentitySchemasResponse, error) {
	return unary(ctx, req, s.inner.GetResourceIdentitySchemas)
}

// ImportResourceState implements tfprotov6.ProviderServer.
func (s *Server) ImportResourceState(ctx context.Context, req *tfprotov6.ImportResourceStateRequest) (*tfprotov6.ImportResourceStateResponse, error) {
	return unary(ctx, req, s.inner.ImportResourceState)
}

// MoveResourceState implements tfprotov6.ProviderServer.
func (s *Server) MoveResourceState(ctx context.Context, req *tfprotov6.MoveResourceStateRequest) (*tfprotov6.MoveResourceStateResponse, error) {
	return unary(ctx, req, s.inner.MoveResourceState)
}

// OpenEphemeralResource implements tfprotov6.ProviderServer.
func (s *Server) OpenEphemeralResource(ctx context.Context, req *tfprotov6.OpenEphemeralResourceRequest) (*tfprotov6.OpenEphemeralResourceResponse, error) {
	return unary(ctx, req, s.inner.OpenEphemeralResource)
}

// PlanResourceChange implements tfprotov6.ProviderServer.
func (s *Server) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	return unary(ctx, req, s.inner.PlanResourceChange)
}

// ReadDataSource implements tfprotov6.ProviderServer.
func (s *Server) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	return unary(ctx, req, s.inner.ReadDataSource)
}

// ReadResource implements tfprotov6.ProviderServer.
func (s *Server) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	return unary(ctx, req, s.inner.ReadResource)
}

// RenewEphemeralResource implements tfprotov6.ProviderServer.
func (s *Server) RenewEphemeralResource(ctx context.Context, req *tfprotov6.RenewEphemeralResourceRequest) (*tfprotov6.RenewEphemeralResourceResponse, error) {
	return unary(ctx, req, s.inner.RenewEphemeralResource)
}

// StopProvider implements tfprotov6.ProviderServer.
func (s *Server) StopProvider(ctx context.Context, req *tfprotov6.StopProviderRequest) (*tfprotov6.StopProviderResponse, error) {
	return unary(ctx, req, s.inner.StopProvider)
}

// UpgradeResourceIdentity implements tfprotov6.ProviderServer.
func (s *Server) UpgradeResourceIdentity(ctx context.Context, req *tfprotov6.UpgradeResourceIdentityRequest) (*tfprotov6.UpgradeResourceIdentityResponse, error) {
	return unary(ctx, req, s.inner.UpgradeResourceIdentity)
}

// UpgradeResourceState implements tfprotov6.ProviderServer.
func (s *Server) UpgradeResourceState(ctx context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	return unary(ctx, req, s.inner.UpgradeResourceState)
}

// ValidateDataResourceConfig implements tfprotov6.ProviderServer.
func (s *Server) ValidateDataResourceConfig(ctx context.Context, req *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	return unary(ctx, req, s.inner.ValidateDataResourceConfig)
}

// ValidateEphemeralResourceConfig implements tfprotov6.ProviderServer.
func (s *Server) ValidateEphemeralResourceConfig(ctx context.Context, req *tfprotov6.ValidateEphemeralResourceConfigRequest) (*tfprotov6.ValidateEphemeralResourceConfigResponse, error) {
	return unary(ctx, req, s.inner.ValidateEphemeralResourceConfig)
}

// ValidateProviderConfig implements tfprotov6.ProviderServer.
func (s *Server) ValidateProviderConfig(ctx context.Context, req *tfprotov6.ValidateProviderConfigRequest) (*tfprotov6.ValidateProviderConfigResponse, error) {
	return unary(ctx, req, s.inner.ValidateProviderConfig)
}

// ValidateResourceConfig implements tfprotov6.ProviderServer.
func (s *Server) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	return unary(ctx, req, s.inner.ValidateResourceConfig)
}

// ValidateListResourceConfig implements tfprotov6.ListResourceServer.
func (s *Server) ValidateListResourceConfig(ctx context.Context, req *tfprotov6.ValidateListResourceConfigRequest) (*tfprotov6.ValidateListResourceConfigResponse, error) {
	if s.list == nil {
		return unimplemented[*tfprotov6.ValidateListResourceConfigResponse]()
	}
	return unary(ctx, req, s.list.ValidateListResourceConfig)
}

// ListResource implements tfprotov6.ListResourceServer.
func (s *Server) ListResource(ctx context.Context, req *tfprotov6.ListResourceRequest) (*tfprotov6.ListResourceServerStream, error) {
	if s.list == nil {
		return unimplemented[*tfprotov6.ListResourceServerStream]()
	}
	return stream(ctx, req, s.list.ListResource)
}

// ValidateActionConfig implements tfprotov6.ActionServer.
func (s *Server) ValidateActionConfig(ctx context.Context, req *tfprotov6.ValidateActionConfigRequest) (*tfprotov6.ValidateActionConfigResponse, error) {
	if s.actions == nil {
		return unimplemented[*tfprotov6.ValidateActionConfigResponse]()
	}
	return unary(ctx, req, s.actions.ValidateActionConfig)
}

// PlanAction implements tfprotov6.ActionServer.
func (s *Server) PlanAction(ctx context.Context, req *tfprotov6.PlanActionRequest) (*tfprotov6.PlanActionResponse, error) {
	if s.actions == nil {
		return unimplemented[*tfprotov6.PlanActionResponse]()
	}
	return unary(ctx, req, s.actions.PlanAction)
}

// InvokeAction implements tfprotov6.ActionServer.
func (s *Server) InvokeAction(ctx context.Context, req *tfprotov6.InvokeActionRequest) (*tfprotov6.InvokeActionServerStream, error) {
	if s.actions == nil {
		return unimplemented[*tfprotov6.InvokeActionServerStream]()
	}
	return stream(ctx, req, s.actions.InvokeAction)
}

// ValidateStateStoreConfig implements tfprotov6.StateStoreServer.
func (s *Server) ValidateStateStoreConfig(ctx context.Context, req *tfprotov6.ValidateStateStoreConfigRequest) (*tfprotov6.ValidateStateStoreConfigResponse, error) {
	if s.stores == nil {
		return unimplemented[*tfprotov6.ValidateStateStoreConfigResponse]()
	}
	return unary(ctx, req, s.stores.ValidateStateStoreConfig)
}

// ConfigureStateStore implements tfprotov6.StateStoreServer.
func (s *Server) ConfigureStateStore(ctx context.Context, req *tfprotov6.ConfigureStateStoreRequest) (*tfprotov6.ConfigureStateStoreResponse, error) {
	if s.stores == nil {
		return unimplemented[*tfprotov6.ConfigureStateStoreResponse]()
	}
	return unary(ctx, req, s.stores.ConfigureStateStore)
}

// ReadStateBytes implements tfprotov6.StateStoreServer.
func (s *Server) ReadStateBytes(ctx context.Context, req *tfprotov6.ReadStateBytesRequest) (*tfprotov6.ReadStateBytesStream, error) {
	if s.stores == nil {
		return unimplemented[*tfprotov6.ReadStateBytesStream]()
	}
	return stream(ctx, req, s.stores.ReadStateBytes)
}

// WriteStateBytes implements tfprotov6.StateStoreServer.
func (s *Server) WriteStateBytes(ctx context.Context, req *tfprotov6.WriteStateBytesStream) (*tfprotov6.WriteStateBytesResponse, error) {
	if s.stores == nil {
		return unimplemented[*tfprotov6.WriteStateBytesResponse]()
	}
	return unary(ctx, req, s.stores.WriteStateBytes)
}

// GetStates implements tfprotov6.StateStoreServer.
func (s *Server) GetStates(ctx context.Context, req *tfprotov6.GetStatesRequest) (*tfprotov6.GetStatesResponse, error) {
	if s.stores == nil {
		return unimplemented[*tfprotov6.GetStatesResponse]()
	}
	return unary(ctx, req, s.stores.GetStates)
}

// DeleteState implements tfprotov6.StateStoreServer.
func (s *Server) DeleteState(ctx context.Context, req *tfprotov6.DeleteStateRequest) (*tfprotov6.DeleteStateResponse, error) {
	if s.stores == nil {
		return unimplemented[*tfprotov6.DeleteStateResponse]()
	}
	return unary(ctx, req, s.stores.DeleteState)
}

// LockState implements tfprotov6.StateStoreServer.
func (s *Server) LockState(ctx context.Context, req *tfprotov6.LockStateRequest) (*tfprotov6.LockStateResponse, error) {
	if s.stores == nil {
		return unimplemented[*tfprotov6.LockStateResponse]()
	}
	return unary(ctx, req, s.stores.LockState)
}

// UnlockState implements tfprotov6.StateStoreServer.
func (s *Server) UnlockState(ctx context.Context, req *tfprotov6.UnlockStateRequest) (*tfprotov6.UnlockStateResponse, error) {
	if s.stores == nil {
		return unimplemented[*tfprotov6.UnlockStateResponse]()
	}
	return unary(ctx, req, s.stores.UnlockState)
}
