package libzone

import (
	"errors"
	"fmt"

	"github.com/rauha-runtime/rauha/zone"
)

// ZoneInfo is a zone with its member containers, as "rauha zone inspect"
// shows it.
type ZoneInfo struct {
	zone.Zone
	Members []zone.Container `json:"members"`
}

// Zones lists every zone of this root with its members.
func (e *Engine) Zones() ([]ZoneInfo, error) {
	var out []ZoneInfo
	err := e.store.View(func(tx *zone.Tx) error {
		zs, err := tx.Zones()
		if err != nil {
			return err
		}
		for _, z := range zs {
			m, err := tx.Members(z.Name)
			if err != nil {
				return err
			}
			out = append(out, ZoneInfo{Zone: z, Members: nonNil(m)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list zones in %s: %w", e.root, err)
	}
	return out, nil
}

// Zone returns one zone with its members.
func (e *Engine) Zone(name string) (*ZoneInfo, error) {
	if err := zone.ValidateName("zone name", name); err != nil {
		return nil, err
	}
	var out *ZoneInfo
	err := e.store.View(func(tx *zone.Tx) error {
		z, err := tx.Zone(name)
		if err != nil {
			return err
		}
		m, err := tx.Members(name)
		if err != nil {
			return err
		}
		out = &ZoneInfo{Zone: *z, Members: nonNil(m)}
		return nil
	})
	if errors.Is(err, zone.ErrNotFound) {
		return nil, fmt.Errorf("zone %s does not exist in %s (see 'rauha zone list')", name, e.root)
	}
	if err != nil {
		return nil, fmt.Errorf("zone %s: %w", name, err)
	}
	return out, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
