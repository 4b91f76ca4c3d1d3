// Package bench holds Skein's benchmarks; BENCHMARKS.md records the figures.
package bench
