package sdk

import (
	"context"
	"fmt"
	"sync"

	"github.com/rayflow/rayflow/internal/sdkrt"
)

var reducers = struct {
	sync.RWMutex
	m map[string]sdkrt.ReducerLeaf
}{m: map[string]sdkrt.ReducerLeaf{}}

// RegisterReducer makes a Reduce reducer callable by name from another
// process of the same binary (the Ray fold actor's leaf process) and
// returns that name ("" when fn is not resolvable by name: a closure, a
// method value or a generic instantiation). Reduce calls it, so a fold
// built at package initialization is registered in every process of the
// binary.
func RegisterReducer[Acc, Item any](fn func(context.Context, Acc, Item) (Acc, error)) string {
	if fn == nil {
		return ""
	}
	id := identify(fn)
	if !id.Resolvable {
		return ""
	}
	leaf := func(ctx context.Context, codec sdkrt.Codec, accB, itemB []byte) ([]byte, error) {
		var acc Acc
		if err := codec.Unmarshal(accB, &acc); err != nil {
			return nil, fmt.Errorf("rayflow: decoding the accumulator: %w", err)
		}
		var item Item
		if err := codec.Unmarshal(itemB, &item); err != nil {
			return nil, fmt.Errorf("rayflow: decoding the item: %w", err)
		}
		out, err := fn(ctx, acc, item)
		if err != nil {
			return nil, err
		}
		return codec.Marshal(out)
	}
	reducers.Lock()
	reducers.m[id.Name] = leaf
	reducers.Unlock()
	return id.Name
}

// lookupReducer returns the reducer registered under name.
func lookupReducer(name string) (sdkrt.ReducerLeaf, bool) {
	reducers.RLock()
	defer reducers.RUnlock()
	r, ok := reducers.m[name]
	return r, ok
}
