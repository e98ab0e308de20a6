// SwiftPM needs a source file to build a C target; the declaration in the header is all
// this target provides.
#include "CLibFuzzer.h"
