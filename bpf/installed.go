package bpf

// InstalledBackend reports which backend the pin directory holds: known is
// false when it holds neither (nothing installed yet, so the caller must
// Probe). Reusing what is installed keeps the probe, which loads and
// attaches a program, off the path of every rauha command.
func InstalledBackend(pinDir string) (lsm, known bool) {
	return installedBackend(listPins(pinDir))
}

func installedBackend(pins pinSet) (lsm, known bool) {
	for _, candidate := range []bool{true, false} {
		for _, p := range ownPrograms(candidate) {
			if pins.has(p) {
				return candidate, true
			}
		}
	}
	return false, false
}
