package storage

// checkpointEvery bounds the links LoadChain walks: a response completing this many
// links below the nearest checkpoint (or the root) becomes one. Reading a checkpoint is
// one row however long the chain; writing one copies the whole context, which is why it
// is not done every turn (at 1,000 turns that was ~10 ms a write).
var checkpointEvery = 32 // SetCheckpointEvery changes it for tests

// checkpointShare is the least share of a chain's links between its checkpoints, for
// long chains: writing a checkpoint copies the whole context, so at a fixed interval
// a chain's every turn would pay a share of a copy growing with the chain; at an
// interval growing with it, a turn pays a constant share, and a load (after a
// restart, or of a chain this process does not keep) walks at most 1/8 of the chain.
const checkpointShare = 8

// CheckpointInterval is how many links below the nearest checkpoint (or the root) a
// response depth links from its chain's root becomes one (Final.Distance): every
// checkpointEvery links, or every depth/8 in a long chain; depth 0 (not known) is
// taken as a short chain.
func CheckpointInterval(depth int) int { return max(checkpointEvery, depth/checkpointShare) }

// SetCheckpointEvery makes short chains checkpoint every n links instead of every 32,
// until the returned function restores the interval. It is for tests and benchmarks of
// stores (checkpoints at every other link exercise them on short chains); it is not
// safe while a store is in use.
func SetCheckpointEvery(n int) (restore func()) {
	old := checkpointEvery
	checkpointEvery = n
	return func() { checkpointEvery = old }
}
