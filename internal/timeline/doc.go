// Package timeline is the model behind a run's Gantt chart: one row per
// step, sleep and hook, in the order the workflow created them, each with
// segments (pending, attempts, sleeps, waits for a payload) and marks
// (payloads received, token conflicts), built from the run's event log.
// A step's compensation (its undo, run when the workflow or its failure
// asked for it) has a row of its own, added below the others when its
// first attempt starts, while the step's row takes the step's compensation
// status (compensating, compensated, compensation_failed).
//
// It draws nothing: the CLI (skein runs show) paints rows as ANSI glyphs,
// the web dashboard as HTML bars, so both show the same chart.
package timeline
