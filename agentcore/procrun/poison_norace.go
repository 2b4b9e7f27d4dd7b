//go:build !race

package procrun

// poisonReleased: see poison_race.go.
const poisonReleased = false
