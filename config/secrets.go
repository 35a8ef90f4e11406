package config

// Secrets returns the non-empty values of the environment variables named
// by any model's api_key_env, longest first, for a writer that must keep
// them out of what it writes (see RedactString).
func (c *Config) Secrets() []string { return secretValues(c) }

// RedactString replaces the secrets in s with Redacted, as the resolved
// configuration does: a secret of eight characters or more wherever it
// occurs, a shorter one only as the whole of s or after a "=", since it
// could not be told apart from ordinary text.
func RedactString(s string, secrets []string) string { return redactString(s, secrets) }
