package knobs

// Worker holds the knobs of the engine, the Worker, the Lambda handler and
// the client.
type Worker struct{}
