package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Stat
	}{
		{nil, Stat{}},
		{[]float64{3}, Stat{3, 3, 3, 1}},
		{[]float64{5, 1, 3}, Stat{3, 1, 5, 3}},
		{[]float64{4, 1, 3, 2}, Stat{2.5, 1, 4, 4}},
	} {
		if got := summarize(tc.in); got != tc.want {
			t.Errorf("summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// Ratios pair each run's value with the floor of the same run, so a slow run of the
// machine moves both and cancels.
func TestReportRatiosArePerRun(t *testing.T) {
	s := newSeries("single turn", "time to first token", "ms", "hearth < 1.02")
	for _, v := range [][3]float64{{100, 150, 101}, {200, 300, 202}, {400, 600, 404}} {
		s.add(SystemRaw, v[0])
		s.add(SystemRuntime, v[1])
		s.add(SystemHearth, v[2])
	}
	g := newSeries("conversation", "turn 20 / turn 1 time to first token", "x", "hearth < 1.5")
	g.add(SystemHearth, 1.2)
	rep := &Report{Settings: Settings{Turns: 20}}
	rep.add(s)
	rep.addGrowth(g)
	rep.check()
	row := rep.Rows[0]
	if row.Floor.Median != 200 || row.Ratio[SystemHearth] != (Stat{1.01, 1.01, 1.01, 3}) || row.Ratio[SystemRuntime].Median != 1.5 {
		t.Errorf("row %+v", row)
	}
	if len(rep.Checks) != 2 || !rep.Checks[0].Met || !rep.Checks[1].Met {
		t.Errorf("checks %+v", rep.Checks)
	}
	var md bytes.Buffer
	rep.Markdown(&md)
	for _, want := range []string{"| single turn | time to first token | 200.0 (100.0–400.0) ms | 1.50 (1.50–1.50)× | 1.01 (1.01–1.01)× | hearth < 1.02 |", "1.20×"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}
