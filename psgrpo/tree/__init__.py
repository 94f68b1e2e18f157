"""Tree sampling (`method: tree`): the group as a tree of shared prefixes, segment values V(node) and ΔV credit."""
