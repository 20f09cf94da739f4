"""The knowledge base: rules and their signatures loaded, checked and cached; error tables expanded into signatures."""
