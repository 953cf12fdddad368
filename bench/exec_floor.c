/* The smallest program a run could exec: returns 0. Built static by
 * bench/lowerbound.sh (no ld.so, no libc relocations), and dynamic. */
int main(void)
{
	return 0;
}
