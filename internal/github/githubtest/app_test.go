package githubtest_test

import (
	"crypto/rand"
	"crypto/rsa"
	"strconv"
	"testing"
	"time"

	jwt "github.com/golang-jwt/jwt/v4"

	"github.com/baton-agent/baton/internal/github/githubtest"
)

func signJWT(t testing.TB, key *rsa.PrivateKey, claims jwt.RegisteredClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func keyOf(key *rsa.PrivateKey) func(int64) (*rsa.PublicKey, bool) {
	return func(id int64) (*rsa.PublicKey, bool) { return &key.PublicKey, id == 42 }
}

func TestVerifyJWT(t *testing.T) {
	t.Parallel()
	key, _ := githubtest.TestAppKey()
	now := time.Now()
	at := func(d time.Duration) *jwt.NumericDate { return jwt.NewNumericDate(now.Add(d)) }
	ok := jwt.RegisteredClaims{Issuer: "42", IssuedAt: at(-30 * time.Second), ExpiresAt: at(90 * time.Second)}
	if id, err := githubtest.VerifyJWT(signJWT(t, key, ok), keyOf(key), now); err != nil || id != 42 {
		t.Fatalf("a good JWT = %d, %v", id, err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"another key":      signJWT(t, other, ok),
		"another app":      signJWT(t, key, jwt.RegisteredClaims{Issuer: "43", IssuedAt: ok.IssuedAt, ExpiresAt: ok.ExpiresAt}),
		"expired":          signJWT(t, key, jwt.RegisteredClaims{Issuer: "42", IssuedAt: at(-10 * time.Minute), ExpiresAt: at(-time.Second)}),
		"issued later":     signJWT(t, key, jwt.RegisteredClaims{Issuer: "42", IssuedAt: at(5 * time.Minute), ExpiresAt: at(6 * time.Minute)}),
		"lives too long":   signJWT(t, key, jwt.RegisteredClaims{Issuer: "42", IssuedAt: at(-time.Second), ExpiresAt: at(20 * time.Minute)}),
		"no expiry":        signJWT(t, key, jwt.RegisteredClaims{Issuer: "42", IssuedAt: ok.IssuedAt}),
		"a personal token": "ghp_" + strconv.Itoa(42),
	} {
		if _, err := githubtest.VerifyJWT(tok, keyOf(key), now); err == nil {
			t.Errorf("%s: verified, want refused", name)
		}
	}
}

// Any change to a signed JWT's text makes it fail verification.
func FuzzVerifyJWT(f *testing.F) {
	key, _ := githubtest.TestAppKey()
	now := time.Now()
	tok := signJWT(f, key, jwt.RegisteredClaims{Issuer: "42", IssuedAt: jwt.NewNumericDate(now.Add(-30 * time.Second)), ExpiresAt: jwt.NewNumericDate(now.Add(2 * time.Minute))})
	if _, err := githubtest.VerifyJWT(tok, keyOf(key), now); err != nil {
		f.Fatal(err)
	}
	f.Add(uint(0), byte(1))
	f.Add(uint(len(tok)-1), byte(1))
	f.Add(uint(len(tok)/2), byte('A'^'B'))
	f.Fuzz(func(t *testing.T, pos uint, flip byte) {
		if flip == 0 {
			return
		}
		b := []byte(tok)
		b[pos%uint(len(b))] ^= flip
		if _, err := githubtest.VerifyJWT(string(b), keyOf(key), now); err == nil {
			t.Fatalf("a JWT changed at %d (^%#x) verified: %q", pos%uint(len(b)), flip, b)
		}
	})
}
