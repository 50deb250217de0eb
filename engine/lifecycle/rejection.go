package lifecycle

import "unicode/utf8"

// RejectionCode says why the reducer refused an event. A refused event
// leaves the state unchanged.
type RejectionCode string

// Rejection codes, in the order the reducer checks them where an order
// applies (docs/lifecycle.md#validation-order).
const (
	CodeInvalidState             RejectionCode = "INVALID_STATE"
	CodeInvalidEvent             RejectionCode = "INVALID_EVENT"
	CodeInvalidIdentity          RejectionCode = "INVALID_IDENTITY"
	CodeStaleSessionIdentity     RejectionCode = "STALE_SESSION_IDENTITY"
	CodeMissingInvocationID      RejectionCode = "MISSING_INVOCATION_IDENTITY"
	CodeStaleInvocationIdentity  RejectionCode = "STALE_INVOCATION_IDENTITY"
	CodeDuplicateInvocation      RejectionCode = "DUPLICATE_INVOCATION"
	CodeInvalidClock             RejectionCode = "INVALID_CLOCK"
	CodeClockRegression          RejectionCode = "CLOCK_REGRESSION"
	CodeInvalidTransition        RejectionCode = "INVALID_TRANSITION"
	CodeActionInProgress         RejectionCode = "ACTION_IN_PROGRESS"
	CodeActionTokenRequired      RejectionCode = "ACTION_TOKEN_REQUIRED"
	CodeUnexpectedActionToken    RejectionCode = "UNEXPECTED_ACTION_TOKEN"
	CodeStaleActionToken         RejectionCode = "STALE_ACTION_TOKEN"
	CodeDuplicateAction          RejectionCode = "DUPLICATE_ACTION"
	CodeActionSequenceExhausted  RejectionCode = "ACTION_SEQUENCE_EXHAUSTED"
	CodeDeadlineNotExpired       RejectionCode = "DEADLINE_NOT_EXPIRED"
	CodeOutputCardinalityInvalid RejectionCode = "OUTPUT_CARDINALITY_INVALID"
	CodeOutputIndexInvalid       RejectionCode = "OUTPUT_INDEX_INVALID"
	CodeOutputAlreadyClaimed     RejectionCode = "OUTPUT_ALREADY_CLAIMED"
	CodeActionPayloadMismatch    RejectionCode = "ACTION_PAYLOAD_MISMATCH"
)

// RejectionCodes lists every rejection code.
var RejectionCodes = []RejectionCode{
	CodeInvalidState, CodeInvalidEvent, CodeInvalidIdentity, CodeStaleSessionIdentity,
	CodeMissingInvocationID, CodeStaleInvocationIdentity, CodeDuplicateInvocation,
	CodeInvalidClock, CodeClockRegression, CodeInvalidTransition, CodeActionInProgress,
	CodeActionTokenRequired, CodeUnexpectedActionToken, CodeStaleActionToken,
	CodeDuplicateAction, CodeActionSequenceExhausted, CodeDeadlineNotExpired,
	CodeOutputCardinalityInvalid, CodeOutputIndexInvalid, CodeOutputAlreadyClaimed,
	CodeActionPayloadMismatch,
}

// Error makes a code usable as an errors.Is target:
// errors.Is(err, lifecycle.CodeStaleActionToken).
func (c RejectionCode) Error() string { return "lifecycle: " + string(c) }

// Rejection is the reducer's refusal of one event. Code is normative;
// Message is a bounded human explanation (at most 256 runes) and is not.
type Rejection struct {
	Code    RejectionCode
	Message string
}

// Error implements error.
func (r *Rejection) Error() string { return "lifecycle: " + string(r.Code) + ": " + r.Message }

// Is reports whether target is r's code or a Rejection with the same code.
func (r *Rejection) Is(target error) bool {
	switch t := target.(type) {
	case RejectionCode:
		return r.Code == t
	case *Rejection:
		return t != nil && r.Code == t.Code
	}
	return false
}

func reject(code RejectionCode, msg string) *Rejection {
	if utf8.RuneCountInString(msg) > MaxRejectionMessageRunes {
		n := 0
		for i := range msg {
			if n == MaxRejectionMessageRunes {
				msg = msg[:i]
				break
			}
			n++
		}
	}
	return &Rejection{Code: code, Message: msg}
}
