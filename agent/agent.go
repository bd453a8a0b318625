// Package agent keeps a node's rauha state roots in step with the
// cluster's ZonePolicy objects and reports, per node, what the node
// enforces. It runs as `rauha-agent run`, one per node (a DaemonSet).
//
// Enforcement never depends on the agent or the API server: the zones live
// in each root's store and the kernel, as if an operator had run `rauha zone
// create|update|delete`; the agent only decides when to run those, using the
// same engine calls (so an update pushes the meet of old and new policy
// first, and a node is never looser than both).
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/rauha-runtime/rauha/api/v1alpha1"
	"github.com/rauha-runtime/rauha/libzone"
	"github.com/rauha-runtime/rauha/zone"
)

// SourcePrefix starts the policy source of every zone the agent made: a
// zone with another source was made by hand and is left alone when no
// ZonePolicy names it.
const SourcePrefix = "zonepolicy:"

// Reconciler applies ZonePolicy objects to the state roots of one node.
type Reconciler struct {
	Client  client.Client
	Node    string
	Engines []*libzone.Engine
	// Resync is how often a zone's status is refreshed and the roots are
	// swept for zones whose ZonePolicy went away while the agent was not
	// watching.
	Resync time.Duration
}

// SetupWithManager registers the controller: it reconciles on every
// ZonePolicy change and on every sweep of the local roots.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	sweeps := make(chan event.TypedGenericEvent[*v1alpha1.ZonePolicy])
	if err := mgr.Add(sweeper{r: r, out: sweeps}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ZonePolicy{}).
		WatchesRawSource(source.Channel(sweeps, &handler.TypedEnqueueRequestForObject[*v1alpha1.ZonePolicy]{})).
		Complete(r)
}

// Reconcile makes every root enforce the named ZonePolicy (or forget it),
// then reports the node's status on the object.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var zp v1alpha1.ZonePolicy
	err := r.Client.Get(ctx, req.NamespacedName, &zp)
	if apierrors.IsNotFound(err) {
		return r.forget(ctx, req.Name)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	st := v1alpha1.NodeStatus{Node: r.Node, ObservedGeneration: zp.Generation, Isolated: true}
	if err := r.apply(ctx, &zp); err != nil {
		st.Error = err.Error()
		st.Isolated = false
		// Keep the generation the node still enforces unknown rather than
		// claim this one.
		st.ObservedGeneration = 0
	}
	r.observe(&st, zp.Name)
	if err := r.writeStatus(ctx, zp.Name, st); err != nil {
		return ctrl.Result{}, fmt.Errorf("zonepolicy %s: write status of node %s: %w", zp.Name, r.Node, err)
	}
	return ctrl.Result{RequeueAfter: r.Resync}, nil
}

// apply creates or updates the zone in every root.
func (r *Reconciler) apply(ctx context.Context, zp *v1alpha1.ZonePolicy) error {
	raw, err := json.Marshal(zp.Spec.Policy)
	if err != nil {
		return fmt.Errorf("encode policy: %w", err)
	}
	p, err := zone.ParsePolicyJSON("zonepolicy "+zp.Name, raw, libzone.SyscallChecker())
	if err != nil {
		return err
	}
	source := SourcePrefix + zp.Name
	var errs []error
	for _, e := range r.Engines {
		info, err := e.Zone(zp.Name)
		switch {
		case errors.Is(err, zone.ErrNotFound):
			_, err = e.CreateZone(zp.Name, p, source)
			if err == nil {
				log.FromContext(ctx).Info("zone created", "root", e.Root(), "generation", zp.Generation)
			}
			// A pod naming the zone is refused by the runtime either way;
			// with the note it says why (kubectl describe pod) instead of
			// "does not exist".
			reason := ""
			if err != nil {
				reason = fmt.Sprintf("this node refused ZonePolicy %s (generation %d): %v", zp.Name, zp.Generation, err)
			}
			if nerr := e.NoteRefusal(zp.Name, reason); nerr != nil {
				err = errors.Join(err, nerr)
			}
		case err != nil:
		case !info.Policy.Equal(p) || info.PolicySource != source:
			_, err = e.UpdateZone(zp.Name, p, source)
			if err == nil {
				log.FromContext(ctx).Info("zone updated", "root", e.Root(), "generation", zp.Generation)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("root %s: %w", e.Root(), err))
		}
	}
	return errors.Join(errs...)
}

// observe fills the node's view of the zone: members, backend, verify.
func (r *Reconciler) observe(st *v1alpha1.NodeStatus, name string) {
	for _, e := range r.Engines {
		info, err := e.Zone(name)
		if err != nil {
			st.Isolated = false
			continue
		}
		st.Members += len(info.Members)
		rep, err := e.Verify(name, "")
		if err != nil {
			st.Isolated = false
			st.Failed = append(st.Failed, fmt.Sprintf("verify in %s: %v", e.Root(), err))
			continue
		}
		st.Backend = rep.Backend
		st.Isolated = st.Isolated && rep.Isolated
		for _, c := range rep.Checks {
			if !c.Passed {
				st.Failed = append(st.Failed, c.Name+": "+c.Detail)
			}
		}
	}
	st.LastUpdate = metav1.Now()
}

// writeStatus applies the node's entry of status.nodes. Server-side apply
// with a field manager per node: the entry is this node's alone, and other
// nodes' entries are never read or rewritten.
func (r *Reconciler) writeStatus(ctx context.Context, name string, st v1alpha1.NodeStatus) error {
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       v1alpha1.Kind,
		"metadata":   map[string]any{"name": name},
		"status":     map[string]any{"nodes": []v1alpha1.NodeStatus{st}},
	})
	if err != nil {
		return err
	}
	obj := &v1alpha1.ZonePolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return r.Client.Status().Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, body),
		client.FieldOwner(r.fieldManager()), client.ForceOwnership)
}

func (r *Reconciler) fieldManager() string { return "rauha-agent/" + r.Node }

// forget deletes the zone the agent made for a ZonePolicy that no longer
// exists, in every root where it has no member left; where members remain
// it tries again at the next resync.
func (r *Reconciler) forget(ctx context.Context, name string) (ctrl.Result, error) {
	var errs []error
	retry := false
	for _, e := range r.Engines {
		if err := e.NoteRefusal(name, ""); err != nil {
			errs = append(errs, fmt.Errorf("root %s: %w", e.Root(), err))
		}
		info, err := e.Zone(name)
		if errors.Is(err, zone.ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("root %s: %w", e.Root(), err))
			continue
		}
		if info.PolicySource != SourcePrefix+name {
			continue // made by hand: not the agent's to delete
		}
		if len(info.Members) > 0 {
			log.FromContext(ctx).Info("zonepolicy deleted; zone kept until its members are gone", "root", e.Root(), "members", len(info.Members))
			retry = true
			continue
		}
		if err := e.DeleteZone(name, false); err != nil {
			errs = append(errs, fmt.Errorf("root %s: %w", e.Root(), err))
			continue
		}
		log.FromContext(ctx).Info("zone deleted", "root", e.Root())
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	if retry {
		return ctrl.Result{RequeueAfter: r.Resync}, nil
	}
	return ctrl.Result{}, nil
}

// managedZones lists the zones the agent made, in every root.
func (r *Reconciler) managedZones() ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, e := range r.Engines {
		zs, err := e.Zones()
		if err != nil {
			return nil, err
		}
		for _, z := range zs {
			if strings.HasPrefix(z.PolicySource, SourcePrefix) && !seen[z.Name] {
				seen[z.Name] = true
				out = append(out, z.Name)
			}
		}
	}
	return out, nil
}

// sweeper queues every zone the agent made, at start and at every resync,
// so that a ZonePolicy deleted while the agent was down (or the API server
// unreachable) is forgotten once the agent sees the cluster again.
type sweeper struct {
	r   *Reconciler
	out chan<- event.TypedGenericEvent[*v1alpha1.ZonePolicy]
}

func (s sweeper) Start(ctx context.Context) error {
	t := time.NewTicker(s.r.Resync)
	defer t.Stop()
	for {
		names, err := s.r.managedZones()
		if err != nil {
			log.FromContext(ctx).Error(err, "sweep of the state roots")
		}
		for _, n := range names {
			ev := event.TypedGenericEvent[*v1alpha1.ZonePolicy]{Object: &v1alpha1.ZonePolicy{ObjectMeta: metav1.ObjectMeta{Name: n}}}
			select {
			case s.out <- ev:
			case <-ctx.Done():
				return nil
			}
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil
		}
	}
}
