package process

import (
	"os/signal"
	"testing"
)

// A detached process has nothing relayed to it: its relay must not catch
// signals (catching all of them holds a CPU for milliseconds of create).
func TestDetachedRelayCatchesNothing(t *testing.T) {
	select {
	case h := <-newSignalRelay(false, true, nil):
		if h.signals != nil {
			t.Fatal("a detached relay catches signals")
		}
	default:
		t.Fatal("a detached relay is not ready at once")
	}
	h := <-newSignalRelay(false, false, nil)
	if h.signals == nil {
		t.Fatal("a foreground relay catches no signals: nothing would be forwarded")
	}
	signal.Stop(h.signals)
}
