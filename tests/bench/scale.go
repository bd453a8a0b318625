package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// scaleTest keeps N sleeping containers alive (N from -scale, ascending)
// and times create, state, list and delete of one more container. One
// runtime at a time: 500 live containers of two runtimes at once would
// measure the machine, not the runtime.
func (b *bench) scaleTest(ctx context.Context, res *results) error {
	rts := []*runtime{b.rt("rauha")}
	if rc := b.runcs(); len(rc) > 0 {
		rts = append(rts, rc[0])
	}
	for _, r := range rts {
		alive, started := 0, 0
		err := func() error {
			defer func() { b.removeAlive(r, started) }()
			for _, level := range b.cfg.scale {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				started = max(started, level)
				if err := b.populate(ctx, r, alive, level); err != nil {
					return err
				}
				alive = level
				s := newSamples()
				if err := b.scaleSamples(ctx, r, s); err != nil {
					return err
				}
				for _, row := range []string{"create", "state", "list", "delete"} {
					sr := s.summary(r.name, row)
					sr.Live = level
					res.Scale = append(res.Scale, sr)
				}
				fmt.Printf("bench: scale %s at %d live done\n", r.name, level)
			}
			return nil
		}()
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
	}
	return nil
}

func scaleID(k int) string { return fmt.Sprintf("bench-live-%d", k) }

// idleBeforeCreate is how long the host's cgroups stay still before each
// timed create of the scale test. A create's first move of a task between
// cgroups waits for an RCU grace period of the kernel's cgroup migration
// lock unless a move happened within about the last grace period (0-20 ms
// here; see the README). Without the pause a create started cold or warm
// depending on how long the commands before it took: `list` at 500 live
// containers takes 28 ms and at 1 live 2 ms, so the lock had gone cold only
// at 500: rauha's create at 500 came out at 1.45x its create at 1, while
// creates 100 ms apart took 29.2-30.9 ms at 500 against 26.8 ms at 1
// (1.09-1.16x; 2026-12-05, perf stat, 30 each).
const idleBeforeCreate = 100 * time.Millisecond

// populate brings r from `from` to `to` running sleep containers, two
// at a time (the machine has two CPUs).
func (b *bench) populate(ctx context.Context, r *runtime, from, to int) error {
	jobs := make(chan int)
	errs := make(chan error, to-from)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				id := scaleID(k)
				bundle, err := b.bundle(r, id, []string{"/bin/sleep", "3600"}, nil)
				if err == nil {
					b.track(r, id, true)
					_, err = r.invoke(nil, "run", "-d", "--bundle", bundle, id)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	for k := from; k < to && ctx.Err() == nil; k++ {
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

func (b *bench) removeAlive(r *runtime, n int) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				if _, err := r.invoke(nil, "delete", "--force", scaleID(k)); err == nil {
					b.track(r, scaleID(k), false)
				}
			}
		}()
	}
	for k := 0; k < n; k++ {
		jobs <- k
	}
	close(jobs)
	wg.Wait()
}

func (b *bench) scaleSamples(ctx context.Context, r *runtime, s *samples) error {
	id := "bench-scale"
	bundle, err := b.bundle(r, id, []string{"/bin/sleep", "3600"}, nil)
	if err != nil {
		return err
	}
	for i := 0; i < 1+b.cfg.scaleN; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rec := s
		if i == 0 {
			rec = newSamples() // warm-up
		}
		b.track(r, id, true)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(idleBeforeCreate):
		}
		for _, st := range []struct {
			row  string
			args []string
		}{
			{"create", []string{"create", "--bundle", bundle, id}},
			{"state", []string{"state", id}},
			{"list", []string{"list"}},
			{"delete", []string{"delete", "--force", id}},
		} {
			c, err := r.invoke(nil, st.args...)
			if err != nil {
				return err
			}
			rec.add(r.name, st.row, c)
		}
		b.track(r, id, false)
	}
	return nil
}
