"""flow ops as generic op views: the plugin reads them by name and builds none, so the
generated op classes (a large module) are not imported by its tools."""
