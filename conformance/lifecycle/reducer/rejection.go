package reducer

import (
	"unicode/utf8"

	"github.com/rayflow/rayflow/gen/lifecycle"
)

// Rejection is the reducer's refusal of one event; a refused event leaves
// the state unchanged. Code is normative (lifecycle.RejectionCodeValues
// lists the codes, in the order the reducer checks them where an order
// applies: docs/lifecycle.md#validation-order); Message is a bounded human
// explanation (at most lifecycle.MaxRejectionMessageRunes runes) and is not.
type Rejection struct {
	Code    lifecycle.RejectionCode
	Message string
}

// Error implements error.
func (r *Rejection) Error() string { return "lifecycle: " + string(r.Code) + ": " + r.Message }

// Is reports whether target is a Rejection with the same code, so that
// errors.Is(err, &reducer.Rejection{Code: lifecycle.RejectionCodeStaleActionToken})
// matches any message.
func (r *Rejection) Is(target error) bool {
	t, ok := target.(*Rejection)
	return ok && t != nil && r.Code == t.Code
}

func reject(code lifecycle.RejectionCode, msg string) *Rejection {
	if utf8.RuneCountInString(msg) > lifecycle.MaxRejectionMessageRunes {
		n := 0
		for i := range msg {
			if n == lifecycle.MaxRejectionMessageRunes {
				msg = msg[:i]
				break
			}
			n++
		}
	}
	return &Rejection{Code: code, Message: msg}
}
