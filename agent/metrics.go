package agent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rauha-runtime/rauha/libzone"
)

// Collector serves the zone counters of the node's roots as Prometheus
// metrics. It reads them at every scrape (the counters live in the kernel's
// maps and the store), so a scrape never shows a value older than itself.
type Collector struct {
	engines  []*libzone.Engine
	members  *prometheus.Desc
	checks   *prometheus.Desc
	denies   *prometheus.Desc
	dropped  *prometheus.Desc
	failures *prometheus.Desc
}

// NewCollector returns the collector of engines' zones.
func NewCollector(engines []*libzone.Engine) *Collector {
	zl := []string{"root", "zone"}
	cl := []string{"root", "zone", "control"}
	return &Collector{
		engines:  engines,
		members:  prometheus.NewDesc("rauha_zone_members", "Containers of the zone on this node.", zl, nil),
		checks:   prometheus.NewDesc("rauha_zone_checks_total", "Operations of the zone's members the control judged.", cl, nil),
		denies:   prometheus.NewDesc("rauha_zone_denies_total", "Operations of the zone's members the control denied.", cl, nil),
		dropped:  prometheus.NewDesc("rauha_zone_dropped_events_total", "Deny events lost because the kernel's ring buffer was full.", zl, nil),
		failures: prometheus.NewDesc("rauha_scrape_errors", "Roots or zones whose counters could not be read at this scrape.", []string{"root"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.members, c.checks, c.denies, c.dropped, c.failures} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.engines {
		root := e.Root()
		failed := 0
		zones, err := e.Zones()
		if err != nil {
			failed++
		}
		for _, z := range zones {
			ch <- prometheus.MustNewConstMetric(c.members, prometheus.GaugeValue, float64(len(z.Members)), root, z.Name)
			st, err := e.ZoneStats(z.Name)
			if err != nil {
				failed++
				continue
			}
			for _, k := range st.Controls {
				ch <- prometheus.MustNewConstMetric(c.checks, prometheus.CounterValue, float64(k.Checks), root, z.Name, k.Control)
				ch <- prometheus.MustNewConstMetric(c.denies, prometheus.CounterValue, float64(k.Denies), root, z.Name, k.Control)
			}
			ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(st.Dropped), root, z.Name)
		}
		ch <- prometheus.MustNewConstMetric(c.failures, prometheus.GaugeValue, float64(failed), root)
	}
}
