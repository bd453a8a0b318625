package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rauha-runtime/rauha/libzone"
	"github.com/rauha-runtime/rauha/zone"
)

// The annotations containerd's CRI plugin puts in the OCI config of every
// container of a pod (the pause sandbox included): they name the pod a
// container belongs to.
const (
	annoSandboxName      = "io.kubernetes.cri.sandbox-name"
	annoSandboxNamespace = "io.kubernetes.cri.sandbox-namespace"
	annoSandboxUID       = "io.kubernetes.cri.sandbox-uid"
	annoContainerName    = "io.kubernetes.cri.container-name"
)

// CursorFile is the file in a state root where the agent remembers how far
// it forwarded the root's events, so that a restarted agent goes on from
// there instead of sending them again.
const CursorFile = "agent-events-cursor.json"

// eventComponent is the source of the Events the agent writes.
const eventComponent = "rauha-agent"

// Annotations reads a container's OCI annotations; nil, nil for a
// container the root does not have (any more).
type Annotations func(id string) (map[string]string, error)

// StateAnnotations reads the annotations from the container's state in the
// engine's root, as `rauha state` shows them.
func StateAnnotations(e *libzone.Engine) Annotations {
	return func(id string) (map[string]string, error) {
		st, err := e.State(id)
		if errors.Is(err, libzone.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return st.Annotations, nil
	}
}

// EventForwarder turns one root's deny and audit events (what `rauha zone
// events` shows) into Kubernetes Events on the pods whose containers caused
// them. Events are aggregated: each flush interval writes at most one
// Event per pod, control and decision, and later flushes add to the same
// Event's count, so a flood of denials costs the API server one write per
// interval and shows as one Event with a count, never as one object per
// denial. How far it got is kept in the root (CursorFile); a restarted
// forwarder resumes there. While the API server cannot be reached the
// counts wait in memory and the cursor stays where it is.
type EventForwarder struct {
	// Client writes Events; Reader reads them and pods without going
	// through a cache (the agent does not watch every Event and pod).
	Client      client.Client
	Reader      client.Reader
	Node        string
	Engine      *libzone.Engine
	Annotations Annotations
	// Interval is the least time between two writes of one Event.
	Interval time.Duration

	mu      sync.Mutex
	pending map[eventKey]*pendingEvent
	order   []eventKey // keys in the order their first event came
	hw      cursor     // the position of the last event taken in
	saved   cursor     // the cursor in the root (flush's alone)
	pods    map[string]*podRef
}

// cursor is a position in a root's event log: every event dated before
// Time, and the first N dated exactly Time, were forwarded (or were not a
// pod's).
type cursor struct {
	Time time.Time `json:"time"`
	N    int       `json:"n"`
}

func (c cursor) before(o cursor) bool {
	return c.Time.Before(o.Time) || c.Time.Equal(o.Time) && c.N < o.N
}

type podRef struct {
	Namespace, Name, Container string
	UID                        types.UID
}

type eventKey struct {
	Namespace, Pod    string
	UID               types.UID
	Control, Decision string
}

// pendingEvent is what came for one key since its Event was last written.
type pendingEvent struct {
	first     cursor // position of the first of them in the log
	count     int32
	firstTime time.Time
	lastTime  time.Time
	last      zone.Event
	lastCont  string
	objects   map[string]bool
}

// Start forwards events until ctx is done. It is a controller-runtime
// Runnable: the agent's manager runs it beside the ZonePolicy controller.
func (f *EventForwarder) Start(ctx context.Context) error {
	lg := log.FromContext(ctx).WithValues("root", f.Engine.Root())
	cur, err := f.readCursor()
	if err != nil {
		// Without a cursor the forwarder would either resend everything or
		// skip what it cannot tell apart: start from now and say so.
		lg.Error(err, "event cursor unreadable: forwarding events from now on")
		cur = cursor{Time: time.Now()}
	}
	f.mu.Lock()
	f.pending = map[eventKey]*pendingEvent{}
	f.pods = map[string]*podRef{}
	f.hw = cur
	f.saved = cur
	f.mu.Unlock()

	follow := make(chan error, 1)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		skip := cur.N
		follow <- f.Engine.FollowEvents(fctx, "", cur.Time, func(ev zone.Event) error {
			// The log is read from the cursor's time on: the first N
			// events of that very time were forwarded already.
			if ev.Time.Equal(cur.Time) && skip > 0 {
				skip--
				return nil
			}
			f.take(ctx, ev)
			return nil
		})
	}()
	t := time.NewTicker(f.Interval)
	defer t.Stop()
	for {
		select {
		case err := <-follow:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("follow the events of %s: %w", f.Engine.Root(), err)
		case <-ctx.Done():
			// What is still pending is sent by the next agent: the cursor
			// did not pass it.
			return nil
		case <-t.C:
			f.flush(ctx)
		}
	}
}

// take adds one logged event to its pod's pending Event.
func (f *EventForwarder) take(ctx context.Context, ev zone.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Events come in the log's order; one dated before the last (appended
	// late by another process) counts at the last one's position.
	switch {
	case ev.Time.After(f.hw.Time):
		f.hw = cursor{Time: ev.Time, N: 1}
	case ev.Time.Equal(f.hw.Time):
		f.hw.N++
	}
	pod := f.pod(ctx, ev.Container)
	if pod == nil {
		return // not a pod's container: nothing to report it on
	}
	k := eventKey{Namespace: pod.Namespace, Pod: pod.Name, UID: pod.UID, Control: ev.Control, Decision: ev.Decision}
	p := f.pending[k]
	if p == nil {
		p = &pendingEvent{first: f.hw, firstTime: ev.Time, objects: map[string]bool{}}
		f.pending[k] = p
		f.order = append(f.order, k)
	}
	p.count++
	p.lastTime = ev.Time
	p.last = ev
	p.lastCont = pod.Container
	p.objects[ev.Object] = true
}

// pod is the pod that owns container id, or nil. Called with f.mu held.
func (f *EventForwarder) pod(ctx context.Context, id string) *podRef {
	if id == "" {
		return nil
	}
	if p, ok := f.pods[id]; ok {
		return p
	}
	a, err := f.Annotations(id)
	if err != nil {
		log.FromContext(ctx).Error(err, "read the container's annotations", "container", id)
		return nil // not cached: the next event of it tries again
	}
	var p *podRef
	if a[annoSandboxName] != "" && a[annoSandboxNamespace] != "" {
		p = &podRef{Namespace: a[annoSandboxNamespace], Name: a[annoSandboxName],
			UID: types.UID(a[annoSandboxUID]), Container: a[annoContainerName]}
	}
	if len(f.pods) > 4096 {
		clear(f.pods) // containers come and go: keep the cache small
	}
	f.pods[id] = p
	return p
}

// flush writes the pending Events and moves the cursor past what was
// written.
func (f *EventForwarder) flush(ctx context.Context) {
	f.mu.Lock()
	batch := make([]struct {
		k eventKey
		p *pendingEvent
	}, 0, len(f.order))
	for _, k := range f.order {
		batch = append(batch, struct {
			k eventKey
			p *pendingEvent
		}{k, f.pending[k]})
	}
	f.pending = map[eventKey]*pendingEvent{}
	f.order = nil
	f.mu.Unlock()

	var failed []int
	for i, b := range batch {
		if err := f.write(ctx, b.k, b.p); err != nil {
			log.FromContext(ctx).Error(err, "write the Event of a denial", "namespace", b.k.Namespace, "pod", b.k.Pod, "control", b.k.Control)
			failed = append(failed, i)
		}
	}
	f.mu.Lock()
	// What failed goes back in front of what came meanwhile, to be merged
	// into the next flush.
	for _, i := range failed {
		b := batch[i]
		if p := f.pending[b.k]; p != nil {
			b.p.count += p.count
			b.p.lastTime, b.p.last, b.p.lastCont = p.lastTime, p.last, p.lastCont
			for o := range p.objects {
				b.p.objects[o] = true
			}
		} else {
			f.order = append(f.order, b.k)
		}
		f.pending[b.k] = b.p
	}
	// The cursor may pass everything taken in when nothing is pending, and
	// otherwise stops just before the earliest event still pending.
	cur := f.hw
	first := true
	for _, p := range f.pending {
		if first || p.first.before(cur) {
			cur = p.first
			first = false
		}
	}
	if !first {
		cur.N = max(cur.N-1, 0)
	}
	f.mu.Unlock()
	if cur.Time.Equal(f.saved.Time) && cur.N == f.saved.N {
		return
	}
	if err := f.writeCursor(cur); err != nil {
		log.FromContext(ctx).Error(err, "remember how far events were forwarded")
		return
	}
	f.saved = cur
}

// write adds a pending batch to its Event, creating it when it does not
// exist (or belongs to an earlier pod of the same name).
func (f *EventForwarder) write(ctx context.Context, k eventKey, p *pendingEvent) error {
	name := eventName(k, f.Node)
	msg := message(k, p)
	uid := k.UID
	if uid == "" {
		// A CRI plugin that does not annotate the pod's uid: `kubectl
		// describe pod` matches Events by it, so ask the API server.
		var pod corev1.Pod
		if err := f.Reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Pod}, &pod); err == nil {
			uid = pod.UID
		}
	}
	var ev corev1.Event
	err := f.Reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: name}, &ev)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case ev.InvolvedObject.UID == uid:
		ev.Count += p.count
		ev.LastTimestamp = metav1.NewTime(p.lastTime)
		ev.Message = msg
		return f.Client.Update(ctx, &ev)
	default:
		// An earlier pod of the same name: its Event goes.
		if err := f.Client.Delete(ctx, &ev); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	fieldPath := ""
	if p.lastCont != "" {
		fieldPath = "spec.containers{" + p.lastCont + "}"
	}
	typ, reason := eventReason(k)
	ev = corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: k.Namespace,
			Name: k.Pod, UID: uid, FieldPath: fieldPath},
		Type:                typ,
		Reason:              reason,
		Message:             msg,
		Count:               p.count,
		FirstTimestamp:      metav1.NewTime(p.firstTime),
		LastTimestamp:       metav1.NewTime(p.lastTime),
		Source:              corev1.EventSource{Component: eventComponent, Host: f.Node},
		ReportingController: "rauha.dev/" + eventComponent,
		ReportingInstance:   f.Node,
	}
	return f.Client.Create(ctx, &ev)
}

// eventReason is an Event's type and reason: Warning DeniedEgress for the
// denials of the egress control, Normal AuditedFile for what a zone in
// audit mode let through that the file control would have denied.
func eventReason(k eventKey) (string, string) {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(k.Control, func(r rune) bool { return r == '_' || r == '-' || r == ' ' }) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	if k.Decision == zone.DecisionAudit {
		return corev1.EventTypeNormal, "Audited" + b.String()
	}
	return corev1.EventTypeWarning, "Denied" + b.String()
}

// message names the last operation of a batch, its process and container,
// and how many other objects the batch had.
func message(k eventKey, p *pendingEvent) string {
	verb := "denied"
	if k.Decision == zone.DecisionAudit {
		verb = "audited (the zone would deny it)"
	}
	ev := p.last
	s := fmt.Sprintf("zone %s %s %s: %s (process %s, pid %d", ev.Zone, k.Control, verb, ev.Object, ev.Comm, ev.Pid)
	if p.lastCont != "" {
		s += ", container " + p.lastCont
	}
	s += ")"
	if n := len(p.objects) - 1; n > 0 {
		s += fmt.Sprintf("; and %d other objects since the last report", n)
	}
	return s
}

// eventName is the name of the one Event of a key on this node: the pod's
// name (as the kubelet names its Events) and a hash of the rest.
func eventName(k eventKey, node string) string {
	h := fnv.New64a()
	for _, s := range []string{string(k.UID), k.Control, k.Decision, node} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	suffix := fmt.Sprintf(".rauha-%016x", h.Sum64())
	pod := k.Pod
	if max := 253 - len(suffix); len(pod) > max {
		pod = pod[:max]
	}
	return pod + suffix
}

func (f *EventForwarder) cursorPath() string { return filepath.Join(f.Engine.Root(), CursorFile) }

// readCursor is where the last forwarder stopped; a root it never ran on
// starts now, so that an agent installed on a node does not send the
// node's history.
func (f *EventForwarder) readCursor() (cursor, error) {
	data, err := os.ReadFile(f.cursorPath())
	if errors.Is(err, os.ErrNotExist) {
		c := cursor{Time: time.Now()}
		return c, f.writeCursor(c)
	}
	if err != nil {
		return cursor{}, err
	}
	var c cursor
	if err := json.Unmarshal(data, &c); err != nil {
		return cursor{}, fmt.Errorf("%s: %w", f.cursorPath(), err)
	}
	return c, nil
}

// writeCursor replaces the cursor file whole (write and rename), so a
// crash leaves the old cursor or the new one.
func (f *EventForwarder) writeCursor(c cursor) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.Engine.Root(), 0o700); err != nil {
		return err
	}
	tmp := f.cursorPath() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, f.cursorPath())
}
