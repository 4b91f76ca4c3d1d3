// Package timeline is the model behind a run's Gantt chart: one row per
// step, sleep and hook, in the order the workflow created them, each with
// segments (pending, attempts, sleeps, waits for a payload) and marks
// (payloads received, token conflicts), built from the run's event log.
//
// It draws nothing: the CLI (skein runs show) paints rows as ANSI glyphs,
// the web dashboard as HTML bars, so both show the same chart.
package timeline
