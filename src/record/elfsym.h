/* Symbols of the loaded objects, read from their dynamic symbol tables in
 * memory, for what the loader's lookups give only at a price the recorder
 * cannot pay: dlsym on an object needs a handle, and a dlopen of an object
 * whose group is still being loaded runs the constructors of the rest of
 * the group then and there, inside whichever constructor called the
 * recorder.  Nothing here runs code of the loader's or of the objects'
 * (an IFUNC symbol, whose resolver would have to run, counts as absent). */
#ifndef HS_ELFSYM_H
#define HS_ELFSYM_H

/* The address of the function or object name as a reference from the
 * object holding address first would find it in that object's group (the
 * object, then what it needs, breadth first, as the loader's local scope
 * of it is); else (or with first NULL) the first loaded object's, in load
 * order, that defines it.  Objects holding skip are passed over.  NULL
 * when none does. */
void *elfsym_find(const char *name, const void *first, const void *skip);

/* Whether the object holding addr stays loaded for good: loaded at
 * start-up (elfsym_note_startup), or marked NODELETE, or defining a
 * unique symbol (which the loader pins as it binds it: libstdc++). */
int elfsym_permanent(const void *addr);

/* Counts the objects loaded at start-up, once: before any dlopen. */
void elfsym_note_startup(void);

#endif
