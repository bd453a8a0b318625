package libzone

import (
	"fmt"

	"github.com/opencontainers/runc/libcontainer/capabilities"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/seccomp"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/opencontainers/runtime-spec/specs-go/features"
)

// Features is the OCI features document of this runtime. Rauha's own
// annotations are listed under org.rauha.* so clients can discover zones.
func Features(version string) *features.Features {
	t := true
	f := &features.Features{
		OCIVersionMin: "1.0.0",
		OCIVersionMax: specs.Version,
		Hooks:         configs.KnownHookNames(),
		MountOptions:  specconv.KnownMountOptions(),
		Annotations: map[string]string{
			"org.rauha.version":            version,
			"org.rauha.annotation.zone":    AnnotationZone + ": name of the zone the container joins; it must exist unless org.rauha.policy names the policy to create it with (default: a zone of its own named after the container)",
			"org.rauha.annotation.policy":  AnnotationPolicy + ": preset (strict, standard, privileged, audit) or policy file for a new zone",
			"org.rauha.checkpoint.enabled": "false",
		},
		Linux: &features.Linux{
			Namespaces:   specconv.KnownNamespaces(),
			Capabilities: capabilities.KnownCapabilities(),
			Cgroup: &features.Cgroup{
				V1: &t, V2: &t, Systemd: &t, SystemdUser: &t, Rdma: &t,
			},
			Apparmor:        &features.Apparmor{Enabled: &t},
			Selinux:         &features.Selinux{Enabled: &t},
			IntelRdt:        &features.IntelRdt{Enabled: &t},
			MountExtensions: &features.MountExtensions{IDMap: &features.IDMap{Enabled: &t}},
		},
	}
	if seccomp.Enabled {
		f.Linux.Seccomp = &features.Seccomp{
			Enabled:        &t,
			Actions:        seccomp.KnownActions(),
			Operators:      seccomp.KnownOperators(),
			Archs:          seccomp.KnownArchs(),
			KnownFlags:     seccomp.KnownFlags(),
			SupportedFlags: seccomp.SupportedFlags(),
		}
		major, minor, patch := seccomp.Version()
		f.Annotations["io.github.seccomp.libseccomp.version"] = fmt.Sprintf("%d.%d.%d", major, minor, patch)
	}
	return f
}

// ExampleSpec is the config.json "rauha spec" writes: runc's example,
// optionally converted for a rootless container.
func ExampleSpec(rootless bool) *specs.Spec {
	s := specconv.Example()
	if rootless {
		specconv.ToRootless(s)
	}
	return s
}
