/* Whether the recorder can load into the program record runs. */
#ifndef HS_PROGRAM_H
#define HS_PROGRAM_H

/* Why the recorder cannot load into the program at path, in a static
 * buffer (NULL: it can, as far as can be told): a static executable
 * ignores LD_PRELOAD, and so does the loader of a program that runs with
 * other privileges; a script is judged by its interpreter. */
const char *program_unloadable(const char *path);

#endif
