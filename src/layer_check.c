/* SPDX-License-Identifier: Apache-2.0 */
/*
 * layer_check.c - the main of the layer link checks (src/CMakeLists.txt):
 * each links one layer whole against only the layers below it, so an upward
 * call is an undefined reference and the build fails.
 */
int
main(void)
{
    return 0;
}
