package canonical

// kind is the JSON type of a decoded node.
type kind uint8

const (
	kindNull kind = iota
	kindFalse
	kindTrue
	kindInt    // s holds the exact decimal digits
	kindFloat  // f holds the double
	kindString // s holds the (normalized) text
	kindArray
	kindObject
)

// node is one decoded JSON value. Objects keep their members sorted by key
// once decoding has finished.
type node struct {
	kind kind
	s    string
	f    float64
	arr  []node
	obj  []member
}

type member struct {
	key string // normalized
	raw string // as written
	val node
}
