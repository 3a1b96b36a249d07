extern "C" __attribute__((visibility("default"))) int unload_me_marker() { return 42; }
