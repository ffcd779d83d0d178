package sqlstore_test

import (
	"context"
	"testing"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

func secretsRewritten(t *testing.T, s storage.Interface) int64 {
	t.Helper()
	n, err := s.SecretsRewritten(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSecretsRewritten: the count of rewrites of logged Secrets moves
// when DropSecretData rewrites some, at once for the process that did and
// for another sharing the database when it first reads it, and stays when
// nothing is left to rewrite.
func TestSecretsRewritten(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		opts := b.Options(t)
		s := storagetest.OpenStore(t, opts)
		keepSecrets(t, s)
		before := secretsRewritten(t, s)
		dropSecretData(t, s, "east")
		after := secretsRewritten(t, s)
		if after <= before {
			t.Fatalf("dropping east's Secret data left the count at %d, from %d", after, before)
		}
		if other := secretsRewritten(t, storagetest.OpenStore(t, opts)); other != after {
			t.Errorf("another process reads %d, want %d", other, after)
		}
		dropSecretData(t, s, "east")
		if again := secretsRewritten(t, s); again != after {
			t.Errorf("dropping again, with nothing left, moved the count from %d to %d", after, again)
		}
	})
}
