"""The privacy layer: ε units, the accountant, the mechanisms, the policy, roles and the ledger."""
