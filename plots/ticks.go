package plots

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// secondsTicks marks a time axis every 1, 2 or 5 × 10^k seconds, about a
// dozen labelled ticks across, with unlabelled minor ticks between.
type secondsTicks struct{}

// Ticks implements plot.Ticker.
func (secondsTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	raw := (hi - lo) / 12
	mag := math.Pow10(int(math.Floor(math.Log10(raw))))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	prec := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	minor := step / 5
	if s := step / mag; s == 2 || s == 20 {
		minor = step / 4
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / minor); i*minor <= hi+minor*1e-6; i++ {
		v := i * minor
		major := math.Abs(v/step-math.Round(v/step)) < 1e-6
		t := plot.Tick{Value: v}
		if major {
			t.Label = strconv.FormatFloat(v, 'f', prec, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}
