// AR4J_API marks the entry points the library exports; it is built with -fvisibility=hidden, so
// everything else (the internal helpers shared between its translation units included) stays
// local to the .so.
#pragma once

#define AR4J_API extern "C" __attribute__((visibility("default")))
