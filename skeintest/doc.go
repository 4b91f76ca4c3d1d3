// Package skeintest helps test Skein workflows. The replay checker
// (CheckHistory, CheckHistories, CheckWorld) replays recorded run
// histories against the code under test.
package skeintest
