package bpf

// InstalledBackend reports which backend the pin directory holds: known is
// false when it holds neither (nothing installed yet, so the caller must
// Probe). Reusing what is installed keeps the probe, which loads and
// attaches a program, off the path of every rauha command.
func InstalledBackend(pinDir string) (lsm, known bool) {
	for _, candidate := range []bool{true, false} {
		for _, p := range ownPrograms(candidate) {
			pin := linkPin(pinDir, p.name)
			if p.perMember {
				pin = progPin(pinDir, p.name)
			}
			if exists(pin) {
				return candidate, true
			}
		}
	}
	return false, false
}
