package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/urfave/cli/v2"

	"github.com/rauha-runtime/rauha/libzone"
	"github.com/rauha-runtime/rauha/zone"
)

var zoneCommand = &cli.Command{
	Name:  "zone",
	Usage: "manage zones: the kernel-enforced boundaries containers run in",
	Subcommands: []*cli.Command{
		zoneCreateCommand,
		zoneUpdateCommand,
		zoneLearnCommand,
		zoneDeleteCommand,
		zoneListCommand,
		zoneInspectCommand,
		zoneVerifyCommand,
		zoneEventsCommand,
		zoneStatsCommand,
		zoneReconcileCommand,
		zoneSuggestCommand,
		zoneSimulateCommand,
	},
}

var zoneListCommand = &cli.Command{
	Name:  "list",
	Usage: "list zones with their member count",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table or json"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 0, exactArgs); err != nil {
			return err
		}
		e, err := newEngine(c)
		if err != nil {
			return err
		}
		zs, err := e.Zones()
		if err != nil {
			return err
		}
		switch f := c.String("format"); f {
		case "json":
			if zs == nil {
				return printJSON([]any{}, "")
			}
			return printJSON(zs, "")
		case "table":
			return printTable(8, func(w io.Writer) {
				fmt.Fprint(w, "NAME\tID\tMODE\tPOLICY\tMEMBERS\n")
				for _, z := range zs {
					fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d\n", z.Name, z.ID, z.Policy.Zone.Mode, z.PolicySource, len(z.Members))
				}
			})
		default:
			return fmt.Errorf("invalid --format %q: use table or json", f)
		}
	},
}

var zoneInspectCommand = &cli.Command{
	Name:      "inspect",
	Usage:     "print a zone, its policy and its members as JSON",
	ArgsUsage: "<zone>",
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		e, err := newEngine(c)
		if err != nil {
			return err
		}
		z, err := e.Zone(c.Args().First())
		if err != nil {
			return err
		}
		return printJSON(z, "  ")
	},
}

// policyFlag reads --policy FILE or --preset NAME (default: standard).
func policyFlag(c *cli.Context, required bool) (*zone.Policy, string, error) {
	p, src, err := policyOrPreset(c, "preset", "NAME")
	switch {
	case err != nil || p != nil:
		return p, src, err
	case required:
		return nil, "", errors.New("--policy FILE or --preset NAME is required")
	}
	return zone.LoadPolicy("preset:standard", nil)
}

// policyOrPreset loads the policy of --policy FILE or of the preset flag
// presetFlag (--preset, or suggest's --base); nil when neither is given.
func policyOrPreset(c *cli.Context, presetFlag, metavar string) (*zone.Policy, string, error) {
	file, preset := c.String("policy"), c.String(presetFlag)
	switch {
	case file != "" && preset != "":
		return nil, "", fmt.Errorf("give --policy FILE or --%s %s, not both", presetFlag, metavar)
	case file != "":
		if !strings.ContainsRune(file, '/') {
			file = "./" + file // a file named like a preset is still a file
		}
		return zone.LoadPolicy(file, libzone.SyscallChecker())
	case preset != "":
		return zone.LoadPolicy("preset:"+preset, nil)
	}
	return nil, "", nil
}

var policyFlags = []cli.Flag{
	&cli.StringFlag{Name: "policy", Usage: "policy file (TOML)"},
	&cli.StringFlag{Name: "preset", Usage: "built-in policy: " + strings.Join(zone.PresetNames(), ", ")},
}

var zoneCreateCommand = &cli.Command{
	Name:      "create",
	Usage:     "create a zone (default policy: the standard preset)",
	ArgsUsage: "<zone>",
	Flags:     policyFlags,
	Action: zonePolicyAction(false, func(e *libzone.Engine, name string, p *zone.Policy, src string) error {
		_, err := e.CreateZone(name, p, src)
		return err
	}),
}

var zoneUpdateCommand = &cli.Command{
	Name:      "update",
	Usage:     "replace a zone's policy; running containers see it on their next checked operation",
	ArgsUsage: "<zone>",
	Flags:     policyFlags,
	Action: zonePolicyAction(true, func(e *libzone.Engine, name string, p *zone.Policy, src string) error {
		_, err := e.UpdateZone(name, p, src)
		return err
	}),
}

// zonePolicyAction is the action of the commands that give a zone a policy.
func zonePolicyAction(required bool, apply func(e *libzone.Engine, name string, p *zone.Policy, src string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		p, src, err := policyFlag(c, required)
		if err != nil {
			return err
		}
		e, err := newEngine(c)
		if err != nil {
			return err
		}
		return apply(e, c.Args().First(), p, src)
	}
}

var zoneLearnCommand = &cli.Command{
	Name:  "learn",
	Usage: "make a zone learn: deny nothing, record what its workloads do (--show prints the recording)",
	Description: `Without --show, the zone (created if it does not exist) learns from the
base policy given (default: the strict preset): its members' workloads are
not denied what the recording covers, and every file they execute, open,
create or change, every destination they send to, every other zone they
reach, every capability they use (bpf-lsm), every signal or ptrace across
zones and every call of a syscall the base policy denies is recorded, from
each workload's first instruction on. Start learning before the workload's
containers are created. 'rauha zone update NAME --policy FILE' ends it.

With --show, prints the recording: kind, object, count, first and last time,
the program and container that did it first.`,
	ArgsUsage: "<zone>",
	Flags: append([]cli.Flag{
		&cli.BoolFlag{Name: "show", Usage: "print what the zone has recorded"},
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "with --show: table or json"},
	}, policyFlags...),
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		name := c.Args().First()
		if c.Bool("show") {
			if c.IsSet("policy") || c.IsSet("preset") {
				return errors.New("--show prints the recording: it takes no --policy or --preset")
			}
			return showObservations(c, name)
		}
		if c.IsSet("format") {
			return errors.New("--format goes with --show")
		}
		if !c.IsSet("policy") && !c.IsSet("preset") {
			if err := c.Set("preset", zone.PresetStrict); err != nil {
				return err
			}
		}
		p, src, err := policyFlag(c, true)
		if err != nil {
			return err
		}
		e, err := newEngine(c)
		if err != nil {
			return err
		}
		_, err = e.LearnZone(name, p, src)
		return err
	},
}

func showObservations(c *cli.Context, name string) error {
	format := c.String("format")
	if format != "table" && format != "json" {
		return fmt.Errorf("invalid --format %q: use table or json", format)
	}
	e, err := newEngine(c)
	if err != nil {
		return err
	}
	obs, err := e.Observations(name)
	if err != nil {
		return err
	}
	if format == "json" {
		return printJSON(obs, "  ")
	}
	notes, err := e.NotLearned()
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "note: "+n)
	}
	return printTable(8, func(w io.Writer) {
		fmt.Fprint(w, "KIND\tOBJECT\tCOUNT\tFIRST\tLAST\tCOMM\tCONTAINER\n")
		for _, o := range obs {
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", o.Kind, o.Object, o.Count,
				o.First.Format(time.RFC3339), o.Last.Format(time.RFC3339), o.Comm, o.Container)
		}
	})
}

var zoneDeleteCommand = &cli.Command{
	Name:      "delete",
	Usage:     "delete a zone (refused while it has members, unless --force)",
	ArgsUsage: "<zone>",
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "kill and delete the zone's containers first"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		e, err := newEngine(c)
		if err != nil {
			return err
		}
		return e.DeleteZone(c.Args().First(), c.Bool("force"))
	},
}

var zoneVerifyCommand = &cli.Command{
	Name:      "verify",
	Usage:     "check that a zone (or one container's zone) is enforced; exit 1 if not isolated",
	ArgsUsage: "<zone> | --container <id>",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "container", Usage: "verify the zone of this container, for this container"},
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "text", Usage: "text or json"},
	},
	Action: func(c *cli.Context) error {
		ct := c.String("container")
		if ct == "" {
			if err := checkArgs(c, 1, exactArgs); err != nil {
				return err
			}
		} else if err := checkArgs(c, 0, exactArgs); err != nil {
			return err
		}
		e, err := newEngine(c)
		if err != nil {
			return err
		}
		r, err := e.Verify(c.Args().First(), ct)
		if err != nil {
			return err
		}
		switch f := c.String("format"); f {
		case "json":
			err = printJSON(r, "  ")
		case "text":
			err = r.WriteText(os.Stdout)
		default:
			return fmt.Errorf("invalid --format %q: use text or json", f)
		}
		if err != nil {
			return err
		}
		if !r.Isolated {
			return &exitError{status: 1}
		}
		return nil
	},
}

var zoneEventsCommand = &cli.Command{
	Name:      "events",
	Usage:     "print the deny (and audit) events of a zone, or of every zone",
	ArgsUsage: "[zone]",
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "follow", Usage: "keep printing new events"},
		&cli.StringFlag{Name: "since", Usage: "only events at or after this time (RFC 3339, or a duration like 10m)"},
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "text", Usage: "text or json (JSON lines)"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, maxArgs); err != nil {
			return err
		}
		since, err := parseSince(c.String("since"))
		if err != nil {
			return err
		}
		format := c.String("format")
		if format != "text" && format != "json" {
			return fmt.Errorf("invalid --format %q: use text or json", format)
		}
		e, err := newEngine(c)
		if err != nil {
			return err
		}
		name := c.Args().First()
		print := eventPrinter(format)
		if !c.Bool("follow") {
			evs, err := e.Events(name, since)
			for _, ev := range evs {
				if perr := print(ev); perr != nil {
					return perr
				}
			}
			return err
		}
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
		defer cancel()
		return e.FollowEvents(ctx, name, since, print)
	},
}

func parseSince(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid --since %q: use RFC 3339 (2026-01-02T15:04:05Z) or a duration (10m)", s)
	}
	return t, nil
}

func eventPrinter(format string) func(zone.Event) error {
	if format == "json" {
		enc := json.NewEncoder(os.Stdout)
		return func(ev zone.Event) error { return enc.Encode(ev) }
	}
	return func(ev zone.Event) error {
		target := ""
		if ev.TargetZone != "" {
			target = " target-zone=" + ev.TargetZone
		}
		_, err := fmt.Printf("%s %s zone=%s container=%s pid=%d comm=%s control=%s object=%q backend=%s%s\n",
			ev.Time.Format(time.RFC3339Nano), strings.ToUpper(ev.Decision), ev.Zone, ev.Container, ev.Pid, ev.Comm, ev.Control, ev.Object, ev.Backend, target)
		return err
	}
}

var zoneStatsCommand = &cli.Command{
	Name:      "stats",
	Usage:     "print a zone's per-control counters (checks, denies, dropped events)",
	ArgsUsage: "<zone>",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table or json"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		e, err := newEngine(c)
		if err != nil {
			return err
		}
		s, err := e.ZoneStats(c.Args().First())
		if err != nil {
			return err
		}
		switch f := c.String("format"); f {
		case "json":
			return printJSON(s, "  ")
		case "table":
			return printTable(8, func(w io.Writer) {
				fmt.Fprintf(w, "zone %s, backend %s, dropped events: %d\n", s.Zone, s.Backend, s.Dropped)
				fmt.Fprint(w, "CONTROL\tCHECKS\tDENIES\tOBSERVED\n")
				for _, cc := range s.Controls {
					fmt.Fprintf(w, "%s\t%d\t%d\t%d\n", cc.Control, cc.Checks, cc.Denies, cc.Observed)
				}
			})
		default:
			return fmt.Errorf("invalid --format %q: use table or json", f)
		}
	},
}

var zoneReconcileCommand = &cli.Command{
	Name:  "reconcile",
	Usage: "repair kernel and state after a crash or reboot: the zone database is the truth",
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 0, exactArgs); err != nil {
			return err
		}
		e, err := newEngine(c)
		if err != nil {
			return err
		}
		fixed, err := e.Reconcile()
		for _, f := range fixed {
			fmt.Println(f)
		}
		return err
	},
}

var zoneSuggestCommand = &cli.Command{
	Name:  "suggest",
	Usage: "print the narrowest policy that allows what a zone recorded (learned, or its deny and audit events)",
	Description: `The suggestion starts from a base policy (--base PRESET or --policy FILE; default:
the base the zone learns against, strict for a zone that is not learning) and widens it
only where a recorded operation needs it; each rule says what needed it.
Apply it with 'rauha zone update NAME --policy FILE', after 'rauha zone simulate'.`,
	ArgsUsage: "<zone>",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "toml", Usage: "toml or json"},
		&cli.StringFlag{Name: "base", Usage: "the preset the suggestion widens: " + strings.Join(zone.PresetNames(), ", ") + " (default: the base the zone learns against, else strict)"},
		&cli.StringFlag{Name: "policy", Usage: "a policy file (TOML) the suggestion widens, instead of --base"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		format := c.String("format")
		if format != "toml" && format != "json" {
			return fmt.Errorf("invalid --format %q: use toml or json", format)
		}
		// Neither --base nor --policy: nil, the base the zone learns
		// against (strict for a zone that is not learning).
		base, src, err := policyOrPreset(c, "base", "PRESET")
		if err != nil {
			return err
		}
		e, err := newEngine(c)
		if err != nil {
			return err
		}
		name := c.Args().First()
		s, r, _, err := e.Suggest(name, base)
		if err != nil {
			return err
		}
		switch {
		case src != "":
		case r.Zone.Learning != nil:
			src = r.Zone.PolicySource // the base it learns against
		default:
			src = "preset:" + zone.PresetStrict
		}
		if format == "json" {
			return printJSON(struct {
				*zone.Suggestion
				Zone   string `json:"zone"`
				Base   string `json:"base"`
				Source string `json:"source"`
				Count  int    `json:"observations"`
				// NotRecorded: what the recording cannot hold here.
				NotRecorded []string `json:"not_recorded,omitempty"`
			}{s, name, src, r.Source, len(r.Observations), r.NotRecorded}, "  ")
		}
		header := []string{
			fmt.Sprintf("Suggested by 'rauha zone suggest %s' from %d recorded operations (%s) on %s,", name, len(r.Observations), recordingSource(r), r.Backend),
			fmt.Sprintf("widening %s. Check it with 'rauha zone simulate %s --policy FILE',", src, name),
			fmt.Sprintf("then apply it with 'rauha zone update %s --policy FILE'.", name),
		}
		for _, n := range r.NotRecorded {
			header = append(header, "Not in the recording: "+n+".")
		}
		_, err = os.Stdout.Write(s.TOML(header...))
		return err
	},
}

func recordingSource(r *libzone.Recording) string {
	if r.Source == libzone.RecordingEvents {
		return "its deny and audit events"
	}
	return "its recording"
}

var zoneSimulateCommand = &cli.Command{
	Name:  "simulate",
	Usage: "replay what a zone recorded against a candidate policy and print what it would deny, changing nothing; exit 1 if anything would be denied",
	Description: `The recording is the zone's observations when it learned, otherwise its deny and
audit events. Exit status: 0 nothing would be denied, 1 something would, 2 error
(also when nothing would be denied but some recorded operations could not be judged).`,
	ArgsUsage: "<zone> --policy FILE",
	Flags: append([]cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "text", Usage: "text or json"},
	}, policyFlags...),
	Action: func(c *cli.Context) error {
		return simulateExit(zoneSimulate(c))
	},
}

// simulateExit maps a failed simulation to exit status 2, so that 1 means
// only "would deny".
func simulateExit(err error) error {
	var ee *exitError
	if err == nil || errors.As(err, &ee) {
		return err
	}
	return &codeError{code: 2, err: err}
}

func zoneSimulate(c *cli.Context) error {
	if err := checkArgs(c, 1, exactArgs); err != nil {
		return err
	}
	format := c.String("format")
	if format != "text" && format != "json" {
		return fmt.Errorf("invalid --format %q: use text or json", format)
	}
	p, _, err := policyFlag(c, true)
	if err != nil {
		return err
	}
	e, err := newEngine(c)
	if err != nil {
		return err
	}
	name := c.Args().First()
	vs, r, unjudged, err := e.Simulate(name, p)
	if err != nil {
		return err
	}
	denied := 0
	for _, v := range vs {
		if v.Decision == zone.DecisionDeny {
			denied++
		}
	}
	if format == "json" {
		if vs == nil {
			vs = []zone.Verdict{}
		}
		err = printJSON(struct {
			Zone     string         `json:"zone"`
			Source   string         `json:"source"`
			Backend  string         `json:"backend"`
			Count    int            `json:"observations"`
			Denied   int            `json:"denied"`
			Verdicts []zone.Verdict `json:"verdicts"`
			Unjudged []string       `json:"unjudged,omitempty"`
		}{name, r.Source, r.Backend, len(r.Observations), denied, vs, errorLines(unjudged)}, "  ")
	} else {
		err = printVerdicts(vs, r)
	}
	if err != nil {
		return err
	}
	switch {
	case denied > 0:
		if unjudged != nil {
			logrus.Warnf("zone %s: not judged: %v", name, unjudged)
		}
		return &exitError{status: 1}
	case unjudged != nil:
		// Nothing denied, but not everything could be judged: no "0".
		return fmt.Errorf("zone %s: recorded operations that cannot be judged: %w", name, unjudged)
	}
	return nil
}

// printVerdicts prints the verdicts grouped by the rule that decides them.
func printVerdicts(vs []zone.Verdict, r *libzone.Recording) error {
	var b strings.Builder
	var rules []string
	byRule := map[string][]zone.Verdict{}
	for _, v := range vs {
		if byRule[v.Rule] == nil {
			rules = append(rules, v.Rule)
		}
		byRule[v.Rule] = append(byRule[v.Rule], v)
	}
	for _, rule := range rules {
		fmt.Fprintf(&b, "%s:\n", rule)
		for _, v := range byRule[rule] {
			o := v.Observation
			fmt.Fprintf(&b, "  %s %s %q: %s (%s)\n", strings.ToUpper(v.Decision), o.Kind, o.Object, v.Reason, o.Describe())
		}
	}
	fmt.Fprintf(&b, "%d of %d recorded operations (%s of zone %s, %s) would be denied or audited\n",
		len(vs), len(r.Observations), recordingSource(r), r.Zone.Name, r.Backend)
	_, err := os.Stdout.WriteString(b.String())
	return err
}

// errorLines are the lines of err's message, nil for nil.
func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}
