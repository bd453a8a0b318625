// rauha-agent keeps a Kubernetes node's rauha zones in step with the
// cluster's ZonePolicy objects (see docs/kubernetes.md). It is a binary of
// its own so that rauha, which every container start runs, does not carry
// the Kubernetes client libraries.
package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/rauha-runtime/rauha/agent"
	"github.com/rauha-runtime/rauha/api/v1alpha1"
	"github.com/rauha-runtime/rauha/libzone"
)

func main() {
	app := &cli.App{
		Name:  "rauha-agent",
		Usage: "keep this node's rauha zones in step with the cluster's ZonePolicy objects",
		Commands: []*cli.Command{
			{
				Name:  "crd",
				Usage: "print the ZonePolicy CustomResourceDefinition (YAML)",
				Action: func(*cli.Context) error {
					out, err := yaml.Marshal(v1alpha1.CRD())
					if err != nil {
						return err
					}
					_, err = os.Stdout.Write(out)
					return err
				},
			},
			runCommand,
			webhookCommand,
		},
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "rauha-agent:", err)
		os.Exit(1)
	}
}

var runCommand = &cli.Command{
	Name:  "run",
	Usage: "watch ZonePolicy objects and apply them to this node's state roots",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "node", EnvVars: []string{"NODE_NAME"}, Usage: "this node's name (the downward API's spec.nodeName)"},
		&cli.StringSliceFlag{Name: "root", Value: cli.NewStringSlice(libzone.DefaultRoot), Usage: "a rauha state root to keep in step (repeat for several: the --root of each runtime handler)"},
		&cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"KUBECONFIG"}, Usage: "kubeconfig file (default: in-cluster configuration)"},
		&cli.DurationFlag{Name: "resync", Value: time.Minute, Usage: "how often each zone's node status is refreshed"},
		&cli.DurationFlag{Name: "event-interval", Value: 5 * time.Second, Usage: "least time between two writes of one pod's Event of a control's denials (0: no Events)"},
		&cli.StringFlag{Name: "metrics-bind-address", Value: ":9500", Usage: "address of /metrics (\"0\" disables it)"},
		&cli.StringFlag{Name: "health-probe-bind-address", Value: "0", Usage: "address of /healthz and /readyz, ready once the ZonePolicy objects are listed (\"0\" disables it)"},
	},
	Action: func(c *cli.Context) error {
		node := c.String("node")
		if node == "" {
			return errors.New("--node (or NODE_NAME) is required: the agent reports per node")
		}
		if c.Duration("resync") <= 0 {
			return errors.New("--resync must be positive")
		}
		if c.Duration("event-interval") < 0 {
			return errors.New("--event-interval must not be negative")
		}
		mgr, err := newManager(c, ctrl.Options{
			Metrics:                metricsserver.Options{BindAddress: c.String("metrics-bind-address")},
			HealthProbeBindAddress: c.String("health-probe-bind-address"),
		})
		if err != nil {
			return fmt.Errorf("controller manager: %w", err)
		}
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return err
		}
		// Ready once the watch of the ZonePolicy objects has listed them all.
		if err := mgr.AddReadyzCheck("zonepolicies-listed", func(req *http.Request) error {
			if !mgr.GetCache().WaitForCacheSync(req.Context()) {
				return errors.New("the ZonePolicy objects are not listed yet")
			}
			return nil
		}); err != nil {
			return err
		}
		var engines []*libzone.Engine
		for _, root := range c.StringSlice("root") {
			e, err := libzone.New(libzone.Options{Root: root})
			if err != nil {
				return err
			}
			engines = append(engines, e)
		}
		ctrlmetrics.Registry.MustRegister(agent.NewCollector(engines))
		if iv := c.Duration("event-interval"); iv > 0 {
			for _, e := range engines {
				f := &agent.EventForwarder{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Node: node,
					Engine: e, Annotations: agent.StateAnnotations(e), Interval: iv}
				if err := mgr.Add(f); err != nil {
					return fmt.Errorf("event forwarder of %s: %w", e.Root(), err)
				}
			}
		}
		r := &agent.Reconciler{Client: mgr.GetClient(), Node: node, Engines: engines, Resync: c.Duration("resync")}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("zonepolicy controller: %w", err)
		}
		return mgr.Start(ctrl.SetupSignalHandler())
	},
}

var webhookCommand = &cli.Command{
	Name:  "webhook",
	Usage: "serve the admission webhook that gives rauha pods naming no zone the zone of the ZonePolicy that selects them",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"KUBECONFIG"}, Usage: "kubeconfig file (default: in-cluster configuration)"},
		&cli.StringFlag{Name: "cert-dir", Required: true, Usage: "directory with the serving certificate tls.crt and its key tls.key"},
		&cli.StringFlag{Name: "host", Value: "", Usage: "address to listen on (default: every address)"},
		&cli.IntFlag{Name: "port", Value: 9443, Usage: "port to listen on"},
		&cli.StringFlag{Name: "runtime-class", Value: "rauha", Usage: "the RuntimeClass whose pods get a zone"},
	},
	Action: func(c *cli.Context) error {
		mgr, err := newManager(c, ctrl.Options{
			Metrics: metricsserver.Options{BindAddress: "0"},
			WebhookServer: webhook.NewServer(webhook.Options{
				Host: c.String("host"), Port: c.Int("port"), CertDir: c.String("cert-dir"),
			}),
		})
		if err != nil {
			return fmt.Errorf("controller manager: %w", err)
		}
		mgr.GetWebhookServer().Register(agent.WebhookPath, &webhook.Admission{Handler: &agent.PodZoner{
			Reader:       mgr.GetAPIReader(),
			Decoder:      admission.NewDecoder(mgr.GetScheme()),
			RuntimeClass: c.String("runtime-class"),
		}})
		return mgr.Start(ctrl.SetupSignalHandler())
	},
}

// newManager is a controller manager for the cluster of --kubeconfig (or
// the in-cluster one), knowing the Kubernetes types and rauha.dev's.
func newManager(c *cli.Context, opts ctrl.Options) (ctrl.Manager, error) {
	ctrl.SetLogger(zap.New())
	cfg, err := restConfig(c.String("kubeconfig"))
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration: %w", err)
	}
	opts.Scheme = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(opts.Scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(opts.Scheme); err != nil {
		return nil, err
	}
	return ctrl.NewManager(cfg, opts)
}

// restConfig is the client configuration of a kubeconfig file, or the
// in-cluster one (a DaemonSet's service account) when none is given.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return rest.InClusterConfig()
}
