//go:build rauha_profile

package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/sirupsen/logrus"
)

// A build with -tags rauha_profile (make build-profile) profiles every call;
// runtime/pprof stays out of the normal binary, where its packages (gzip,
// text/tabwriter) and their initialisers would cost every call.

// startCPUProfile writes a CPU profile of this call to
// $RAUHA_CPUPROFILE.<pid> when that is set, for finding what a command
// spends its few milliseconds on (merge many calls with `go tool pprof`).
// Never for "rauha init", which becomes the container's process.
func startCPUProfile() (stop func()) {
	prefix := os.Getenv("RAUHA_CPUPROFILE")
	if prefix == "" || (len(os.Args) > 1 && os.Args[1] == "init") {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", prefix, os.Getpid()))
	if err != nil {
		logrus.Warnf("RAUHA_CPUPROFILE: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		logrus.Warnf("RAUHA_CPUPROFILE: %v", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
