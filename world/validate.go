package world

import (
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"strings"
)

// Validation of proposed events: what any state would refuse (ErrInvalid).

// ValidateEvent checks an event proposed for appending: a known type, a
// correlation ID of the right kind, and the payload's required fields. Its
// refusal is a *RefusalError of ErrInvalid.
func ValidateEvent(e Event) error {
	if e.Data == nil {
		return &RefusalError{Kind: ErrInvalid, Reason: "event without data"}
	}
	// Every payload type is a pointer; a typed nil (say (*StepCreated)(nil))
	// would panic in validate.
	if v := reflect.ValueOf(e.Data); v.Kind() == reflect.Pointer && v.IsNil() {
		return invalidf(e.Data.eventType(), e.CorrelationID, "nil payload")
	}
	return e.Data.validate(e.CorrelationID)
}

func noCorrelation(t EventType, corr string) error {
	if corr != "" {
		return invalidf(t, corr, "run events take no correlation ID")
	}
	return nil
}

func correlation(t EventType, prefix, corr string) error {
	if corr == "" {
		return invalidf(t, "", "correlation ID required")
	}
	if err := ValidateID(prefix, corr); err != nil {
		return invalidf(t, corr, "%v", err)
	}
	return nil
}

func validJSON(t EventType, corr, field string, b json.RawMessage) error {
	if len(b) > 0 && !json.Valid(b) {
		return invalidf(t, corr, "%s is not valid JSON", field)
	}
	return nil
}

func (d *RunCreated) validate(corr string) error {
	if err := noCorrelation(EventRunCreated, corr); err != nil {
		return err
	}
	if strings.TrimSpace(d.WorkflowName) == "" {
		return invalidf(EventRunCreated, "", "workflowName required (not blank)")
	}
	if len(d.WorkflowName) > MaxNameLength {
		return invalidf(EventRunCreated, "", "workflowName longer than %d bytes", MaxNameLength)
	}
	if err := CheckText(d.WorkflowName); err != nil {
		return invalidf(EventRunCreated, "", "workflowName %q %v", d.WorkflowName, err)
	}
	if len(d.IdempotencyKey) > MaxIdempotencyKeyLength {
		return invalidf(EventRunCreated, "", "idempotencyKey longer than %d bytes", MaxIdempotencyKeyLength)
	}
	if err := CheckText(d.IdempotencyKey); err != nil {
		return invalidf(EventRunCreated, "", "idempotencyKey %q %v", d.IdempotencyKey, err)
	}
	if err := CheckVersion(d.Version); err != nil {
		return invalidf(EventRunCreated, "", "%v", err)
	}
	if err := validJSON(EventRunCreated, "", "input", d.Input); err != nil {
		return err
	}
	if err := validAttributes(EventRunCreated, "", d.Attributes); err != nil {
		return err
	}
	return validJSON(EventRunCreated, "", "executionContext", d.ExecutionContext)
}

func (d *RunStarted) validate(corr string) error { return noCorrelation(EventRunStarted, corr) }

func (d *RunCompleted) validate(corr string) error {
	if err := noCorrelation(EventRunCompleted, corr); err != nil {
		return err
	}
	return validJSON(EventRunCompleted, "", "output", d.Output)
}

func (d *RunFailed) validate(corr string) error {
	if err := noCorrelation(EventRunFailed, corr); err != nil {
		return err
	}
	if d.Error == nil {
		return invalidf(EventRunFailed, "", "error required")
	}
	return nil
}

func (d *RunCancelled) validate(corr string) error { return noCorrelation(EventRunCancelled, corr) }

func (d *RunHeld) validate(corr string) error {
	if err := noCorrelation(EventRunHeld, corr); err != nil {
		return err
	}
	switch {
	case d.Error == nil:
		return invalidf(EventRunHeld, "", "error required")
	case d.ErrorCode == "":
		return invalidf(EventRunHeld, "", "errorCode required")
	case d.Attempt < 0:
		return invalidf(EventRunHeld, "", "negative attempt")
	}
	return nil
}

func (d *StepCreated) validate(corr string) error {
	if err := correlation(EventStepCreated, PrefixStep, corr); err != nil {
		return err
	}
	if d.StepName == "" {
		return invalidf(EventStepCreated, corr, "stepName required")
	}
	if len(d.StepName) > MaxNameLength {
		return invalidf(EventStepCreated, corr, "stepName longer than %d bytes", MaxNameLength)
	}
	if err := CheckText(d.StepName); err != nil {
		return invalidf(EventStepCreated, corr, "stepName %q %v", d.StepName, err)
	}
	if len(d.Compensation) > MaxNameLength {
		return invalidf(EventStepCreated, corr, "compensation longer than %d bytes", MaxNameLength)
	}
	if err := CheckText(d.Compensation); err != nil {
		return invalidf(EventStepCreated, corr, "compensation %q %v", d.Compensation, err)
	}
	if !validDigest(d.InputDigest) {
		return invalidf(EventStepCreated, corr, "inputDigest must be at most %d lowercase hex digits", maxDigestLength)
	}
	if err := validPatches(EventStepCreated, corr, d.Patches); err != nil {
		return err
	}
	return validJSON(EventStepCreated, corr, "input", d.Input)
}

// maxDigestLength bounds a recorded digest (a whole SHA-256 sum in hex).
const maxDigestLength = 2 * sha256.Size

// validDigest accepts the empty digest (none recorded) and up to
// maxDigestLength lowercase hex digits.
func validDigest(d string) bool {
	if len(d) > maxDigestLength {
		return false
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (d *StepStarted) validate(corr string) error {
	if err := correlation(EventStepStarted, PrefixStep, corr); err != nil {
		return err
	}
	if d.LeaseTTL < 0 {
		return invalidf(EventStepStarted, corr, "negative lease")
	}
	return nil
}

func (d *StepCompleted) validate(corr string) error {
	if err := correlation(EventStepCompleted, PrefixStep, corr); err != nil {
		return err
	}
	return validJSON(EventStepCompleted, corr, "result", d.Result)
}

func (d *StepFailed) validate(corr string) error {
	if err := correlation(EventStepFailed, PrefixStep, corr); err != nil {
		return err
	}
	if d.Error == nil {
		return invalidf(EventStepFailed, corr, "error required")
	}
	return nil
}

func (d *StepRetrying) validate(corr string) error {
	if err := correlation(EventStepRetrying, PrefixStep, corr); err != nil {
		return err
	}
	if d.Error == nil {
		return invalidf(EventStepRetrying, corr, "error required")
	}
	return nil
}

// MaxNameLength bounds workflow and step names. Names are identifiers from
// code, stored beside every entity and index entry that carries them; the
// bound keeps a commit's size a function of its event count (see
// AppendLimiter). Names, tokens and idempotency keys must also be valid
// UTF-8: the log is JSON, which would replace invalid bytes, and a name read
// back would no longer match the code's.
const MaxNameLength = 256

// MaxIdempotencyKeyLength bounds a run's idempotency key (a World may key
// an item by it; DynamoDB keys cap at 1 KB).
const MaxIdempotencyKeyLength = 512

// MaxTokenLength bounds hook tokens (DynamoDB keys cap at 1 KB; the token item
// is keyed by a hash, but the token is stored beside it).
const MaxTokenLength = 512

func (d *HookCreated) validate(corr string) error {
	if err := correlation(EventHookCreated, PrefixHook, corr); err != nil {
		return err
	}
	if d.Token == "" {
		return invalidf(EventHookCreated, corr, "token required")
	}
	if len(d.Token) > MaxTokenLength {
		return invalidf(EventHookCreated, corr, "token longer than %d bytes", MaxTokenLength)
	}
	if err := CheckText(d.Token); err != nil {
		return invalidf(EventHookCreated, corr, "token %q %v", d.Token, err)
	}
	if err := validPatches(EventHookCreated, corr, d.Patches); err != nil {
		return err
	}
	return validJSON(EventHookCreated, corr, "metadata", d.Metadata)
}

func (d *HookConflict) validate(corr string) error {
	if err := correlation(EventHookConflict, PrefixHook, corr); err != nil {
		return err
	}
	if d.Token == "" {
		return invalidf(EventHookConflict, corr, "token required")
	}
	return validPatches(EventHookConflict, corr, d.Patches)
}

func (d *HookReceived) validate(corr string) error {
	if err := correlation(EventHookReceived, PrefixHook, corr); err != nil {
		return err
	}
	return validJSON(EventHookReceived, corr, "payload", d.Payload)
}

func (d *HookDisposed) validate(corr string) error {
	return correlation(EventHookDisposed, PrefixHook, corr)
}

func (d *WaitCreated) validate(corr string) error {
	if err := correlation(EventWaitCreated, PrefixWait, corr); err != nil {
		return err
	}
	if d.ResumeAt.IsZero() {
		return invalidf(EventWaitCreated, corr, "resumeAt required")
	}
	return validPatches(EventWaitCreated, corr, d.Patches)
}

func (d *WaitCompleted) validate(corr string) error {
	return correlation(EventWaitCompleted, PrefixWait, corr)
}
