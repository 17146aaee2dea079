/* The program that the spawn benchmarks start: it does nothing and exits. */
int main(void)
{
	return 0;
}
