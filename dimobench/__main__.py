from dimobench.cli import main

main()
