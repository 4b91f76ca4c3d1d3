package knobs

// World holds the knobs of the Worlds (localworld, dynamoworld) and of the
// packages beside them (streams, encrypt, webui, skeinhttp). It imports no
// AWS code: an AWS-typed knob belongs to its package's own internal options.
type World struct{}
