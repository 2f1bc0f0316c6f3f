"""The registration pass (lifecycle.md L6): per scale set, every few minutes, compare our
EphemeralRunners with GitHub's registrations and clean up what leaked — an ER whose registration
is gone, a registration with no ER, a runner offline for good while its pod runs (ARC
#4395/#4396), and optionally an idle runner past its maximum age (ARC #4100)."""
