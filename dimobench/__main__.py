from dimobench.cli.app import main

main()
