//go:build race

package domain

// raceEnabled: the race detector drops sync.Pool items at random, so a
// count of allocations says nothing under it.
const raceEnabled = true
