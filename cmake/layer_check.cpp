// The one source of each module's layer check (cmake/LizardModules.cmake): a
// shared library that holds every object of the module and links only the
// modules below it, with no undefined symbol allowed, so that a call up the
// layers fails the build.
