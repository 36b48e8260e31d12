"""One adapter module per API family; importing a module registers its family and systems."""
