"""Components of the redescription family: the Mine page's form and launch, Explore (scatter,
list, workspace, export, custom query, noisy map), the owner & teaching views."""
