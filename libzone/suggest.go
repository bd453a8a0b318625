package libzone

import (
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/rauha-runtime/rauha/zone"
)

// Sources of a Recording.
const (
	RecordingLearned = "recording" // the zone learned: its observations
	RecordingEvents  = "events"    // its deny and audit events, converted
)

// Recording is what a zone's members did that its policy would deny: what
// "zone suggest" widens a policy for and "zone simulate" replays.
type Recording struct {
	Zone         zone.Zone          `json:"zone"`
	Source       string             `json:"source"`
	Backend      string             `json:"backend"`
	Observations []zone.Observation `json:"observations"`
	// NotRecorded says what a learning zone cannot record on this
	// backend and kernel (NotLearned): a suggestion cannot allow it.
	NotRecorded []string `json:"not_recorded,omitempty"`
}

// Recording drains the kernel's waiting events and learned operations
// first, so that it holds everything recorded so far, then returns the
// zone's observations or, for a zone that is not learning and has none, its
// deny and audit events since it was created, converted
// (zone.EventObservations).
func (e *Engine) Recording(name string) (*Recording, error) {
	info, err := e.Zone(name)
	if err != nil {
		return nil, err
	}
	log, err := e.DrainEvents()
	if err != nil {
		return nil, err
	}
	lsm, err := e.kernelBackend()
	if err != nil {
		return nil, err
	}
	r := &Recording{Zone: info.Zone, Source: RecordingLearned, Backend: BackendLandlock, NotRecorded: e.notLearned(lsm)}
	if lsm {
		r.Backend = BackendLSM
	}
	if err := e.store.View(func(tx *zone.Tx) (err error) {
		r.Observations, err = tx.Observations(name)
		return err
	}); err != nil {
		return nil, err
	}
	if info.Learning != nil || len(r.Observations) > 0 {
		return r, nil
	}
	evs, err := log.Read(name, info.Created)
	if errors.Is(err, zone.ErrMalformedEvents) {
		logrus.Warnf("zone %s: %v", name, err) // the lines that decoded still count
	} else if err != nil {
		return nil, err
	}
	r.Source = RecordingEvents
	r.Observations = zone.EventObservations(evs)
	return r, nil
}

// simulateContext is where r would be enforced: this root's backend, and
// the other zones' signals.allowed_zones as the store holds them now.
func (e *Engine) simulateContext(r *Recording) zone.SimulateContext {
	return zone.SimulateContext{
		Zone:      r.Zone.Name,
		Landlock:  r.Backend == BackendLandlock,
		Footprint: r.Source == RecordingLearned,
		SignalAllowedBy: func(target string) bool {
			var allowed bool
			err := e.store.View(func(tx *zone.Tx) error {
				z, err := tx.Zone(target)
				if err != nil {
					return err
				}
				for _, n := range z.Policy.Signals.AllowedZones {
					allowed = allowed || n == r.Zone.Name
				}
				return nil
			})
			if err != nil && !errors.Is(err, zone.ErrNotFound) {
				logrus.Warnf("read the policy of zone %s: %v", target, err)
			}
			return allowed
		},
	}
}

// Suggest returns the narrowest policy that allows zone name's recording,
// widened from base (nil: the base the zone learns against, or the strict
// preset for a zone that is not learning), the recording it was made from,
// and the base used.
func (e *Engine) Suggest(name string, base *zone.Policy) (*zone.Suggestion, *Recording, *zone.Policy, error) {
	r, err := e.Recording(name)
	if err != nil {
		return nil, nil, nil, err
	}
	switch {
	case base != nil:
	case r.Zone.Learning != nil:
		base = r.Zone.Learning
	default:
		if base, err = zone.Preset(zone.PresetStrict); err != nil {
			return nil, nil, nil, err
		}
	}
	s, err := zone.Suggest(base, r.Observations, e.simulateContext(r))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("zone %s: %w", name, err)
	}
	return s, r, base, nil
}

// Simulate replays zone name's recording against a candidate policy and
// returns what it would deny or audit; nothing changes. unjudged names the
// observations that could not be judged (malformed), which the verdicts
// leave out.
func (e *Engine) Simulate(name string, candidate *zone.Policy) (vs []zone.Verdict, r *Recording, unjudged, err error) {
	if r, err = e.Recording(name); err != nil {
		return nil, nil, nil, err
	}
	vs, unjudged = zone.Simulate(candidate, r.Observations, e.simulateContext(r))
	return vs, r, unjudged, nil
}
