#include "guard.h"

__thread struct hs_guard hs_guard __attribute__((tls_model("initial-exec")));
