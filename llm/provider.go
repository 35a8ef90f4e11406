package llm

import "github.com/mediated-coevo/harness/config"

// ProviderOffline is the [models.<role>] provider this package answers
// itself (NewOffline). Every other provider is built outside it, by the
// program's composition root, and handed in as a Provider.
const ProviderOffline = config.ProviderOffline
